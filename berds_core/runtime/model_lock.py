"""One lock for building and loading torch models in this process.

transformers' ``from_pretrained`` is not thread-safe. While it runs it patches
process-wide state: ``PreTrainedModel.tie_weights`` and ``init_weights`` become
no-ops and the ``torch.nn.init`` functions are swapped out (``no_tie_weights``,
``no_init_weights`` in ``transformers.initialization``). A model loaded or
built in another thread at that moment comes out untied (a GPT-2 whose output
layer stays zero predicts a uniform distribution), with uninitialised layers
(a LoRA adapter or a new head), or fails with "Cannot copy out of meta tensor".

The app loads models in the background (the warm-up thread) while a page may
load a judge or a generator, so every model the engine builds or loads goes
through :func:`model_loading`. It is re-entrant: a loader may call another.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

_LOCK = threading.RLock()


@contextmanager
def model_loading():
    """Hold the process-wide model-loading lock for the duration of the block."""
    with _LOCK:
        yield
