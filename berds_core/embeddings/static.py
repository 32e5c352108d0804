"""Static embedding models (model2vec): one vector per token, averaged; the fast first stage for large corpora.

A static model is distilled from a sentence-transformer (the packaged MiniLM by default) with ``model2vec``'s
``distill`` (no training data, no network): every vocabulary token goes through the transformer once, the
token vectors are reduced by PCA and weighted by Zipf's law (SIF). Encoding a passage is then a lookup and
a mean, about a hundred times faster than the transformer on a CPU, and about as much worse at ranking: a
first stage whose candidates the transformer re-reads (the ``reread`` stage, ``static%N>>reread``).

``model2vec[distill]`` requires ``transformers<5.4`` while the studio pins a later one, so distillation runs
in a virtual environment of its own (:func:`distill_env`: made once, ``$BERDS_DISTILL_VENV`` or the cache's
``distill-venv``, its packages pinned in :data:`DISTILL_PACKAGES`), by the worker script
``_distill_worker.py`` (it imports model2vec only). Reading a static folder (is it one, its name and record)
is :mod:`.static_folder`'s, which the encoders import. What it writes is a sentence-transformers folder (a
``StaticEmbedding`` and a ``Normalize`` module), so the studio loads it as it loads MiniLM and every dense path
(index folders, shards, FAISS flat or IVF-PQ, ``--ray``) takes it unchanged. The folder is made reproducible
(the same bytes twice): the worker's model card (which names the output folder) is dropped, the tokenizer's
source is written as the source model's id (not its install path), and ``berds_static.json`` records the
source, its weights' hash, the vocabulary size, the dimensions and the versions.

Encoding needs only what the studio already has (sentence-transformers' ``StaticEmbedding``: the tokenizer
and an ``EmbeddingBag``); a static vector is cheaper to compute than to read back from the embedding store,
so static models are encoded and not stored (``text_encoders.text_encoder``).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import InputError
from ..files.cache import cache_dir
from ..files.jsonio import atomic_write
from ..files.shard_files import sha256
from .models import model_key, resolve_model
from .static_folder import META, is_static

DISTILL_PACKAGES = ("model2vec[distill]==0.10.0", "transformers==5.3.0", "torch==2.13.0", "tokenizers==0.22.2",
                    "skeletoken==0.6.1", "scikit-learn==1.9.1", "numpy==2.4.6", "safetensors==0.8.0")
DEFAULT_DIMS = 256
WORKER = Path(__file__).with_name("_distill_worker.py")


def default_name(source_key: str, dims: int) -> str:
    """The folder name of a distilled model: the source's last path part and the dimensions."""
    return f"{source_key.rstrip('/').rsplit('/', 1)[-1]}-{int(dims)}d"


def static_dir() -> Path:
    """Where ``berds models distill`` writes static models: the cache's ``static`` folder."""
    return cache_dir("static")


def default_static_model() -> Path:
    """The static model the ``static`` retriever reads when none is named: the packaged MiniLM's distillation."""
    return static_dir() / default_name(model_key(None), DEFAULT_DIMS)


def static_model(model=None) -> str:
    """The static folder to encode with: ``model`` when it is one, the default distillation when None;
    InputError (one line, what to run) when it is missing or not static."""
    path = Path(model) if model is not None else default_static_model()
    if is_static(path):
        return str(path)
    if model is None:
        raise InputError(path, None, "static model", "not distilled yet: run `berds models distill` (about a "
                                                      "minute: it makes its own environment once)")
    raise InputError(path, None, "--model", "not a static embedding folder (the static retriever reads a model "
                                            "from `berds models distill`)")


# ---------------------------------------------------------------- distillation (in an environment of its own)
def distill_env() -> Path:
    """The interpreter of the distillation environment, made (``python -m venv`` and pip, pinned) when missing
    or when its packages differ from :data:`DISTILL_PACKAGES`."""
    venv = Path(os.environ.get("BERDS_DISTILL_VENV") or cache_dir("distill-venv"))
    python = venv / "bin" / "python"
    stamp = venv / "berds-packages.txt"
    want = "\n".join(DISTILL_PACKAGES) + "\n"
    if python.exists() and stamp.is_file() and stamp.read_text(encoding="utf-8") == want:
        return python
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *DISTILL_PACKAGES]]
    for cmd in steps:
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise InputError(venv, None, "distill environment", f"{' '.join(cmd[:4])} ... failed: {tail[0]}")
    with atomic_write(stamp) as fh:
        fh.write(want)
    return python


def distill(source: str | None = None, out: Path | None = None, dims: int = DEFAULT_DIMS,
            python: Path | None = None) -> dict:
    """Distil ``source`` (a sentence-transformers folder or alias; None: the packaged MiniLM) into a static
    model at ``out`` (default: the cache's ``static/<source>-<dims>d``); returns its record. The folder is
    written beside and renamed into place, so a failed run leaves no half model."""
    src = resolve_model(source)
    if not os.path.isdir(src):
        raise InputError(src, None, "--source", "not a local sentence-transformers folder (distillation reads no hub)")
    key = model_key(source)
    out = Path(out) if out is not None else static_dir() / default_name(key, dims)
    if out.exists() and not (out.is_dir() and (is_static(out) or not any(out.iterdir()))):
        raise InputError(out, None, "--out", "exists and is not a static model: give a new or empty folder (a "
                                             "static model there is replaced)")
    tmp = out.with_name(out.name + ".part")
    if tmp.exists():
        shutil.rmtree(tmp)  # a distillation that stopped half-way
    python = python or distill_env()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    res = subprocess.run([str(python), str(WORKER), src, str(tmp), str(int(dims))], capture_output=True, text=True,
                         env=env)
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise InputError(src, None, "--source", f"distillation failed: {tail[0]}")
    versions = json.loads(res.stdout.strip().splitlines()[-1])
    (tmp / "README.md").unlink(missing_ok=True)  # the model card names the output folder: not reproducible
    cfg_path = tmp / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["tokenizer_name"] = key  # not the install path of the source
    with atomic_write(cfg_path) as fh:
        fh.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    weights = next((p for p in (Path(src) / "model.safetensors", Path(src) / "pytorch_model.bin") if p.is_file()), None)
    tok = json.loads((tmp / "tokenizer.json").read_text(encoding="utf-8"))
    meta = {"name": out.name, "source": key, "source_weights_sha256": sha256(weights) if weights else None,
            "dims": int(cfg.get("hidden_dim", dims)), "vocabulary": len(tok.get("model", {}).get("vocab", {})),
            "pca_dims": cfg.get("apply_pca"), "sif_coefficient": cfg.get("sif_coefficient"),
            "embedding_dtype": cfg.get("embedding_dtype"), "weights_sha256": sha256(tmp / "model.safetensors"),
            **versions}
    with atomic_write(tmp / META) as fh:
        fh.write(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    if out.exists():  # a static model (or an empty folder): replaced
        shutil.rmtree(out)
    tmp.rename(out)
    return {**meta, "path": str(out)}
