"""``berds models distill|list``: static embedding models for the ``static`` retriever.

    berds models distill                      # the packaged MiniLM -> <cache>/static/all-MiniLM-L6-v2-256d
    berds models distill --source ./all-mpnet-base-v2 --dims 256 --json
    berds models list --json                  # the static models in the cache and what each records

Distillation (``berds_core.embeddings.static``) runs in an environment of its own, made on first use
(``$BERDS_DISTILL_VENV`` or the cache's ``distill-venv``: model2vec needs an older transformers than the
studio's); it reads local folders only and writes the same bytes twice.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ._parsing import declare


def _common(p) -> None:
    # --json / --quiet are accepted before or after the action (SUPPRESS keeps the parent's value)
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars")


def register(sub) -> None:
    models = sub.add_parser("models", help="static embedding models: distill one from the encoder, list them")
    acts = models.add_subparsers(dest="action", required=True, parser_class=type(models))

    p = acts.add_parser("distill", help="distil a sentence-transformers folder into a static (model2vec) model")
    _common(p)
    p.add_argument("--source", default=None, help="a local sentence-transformers folder (default: the packaged "
                                                  "all-MiniLM-L6-v2)")
    p.add_argument("--dims", type=int, default=None, help="dimensions after PCA (default 256)")
    p.add_argument("--out", default=None, help="the model's folder (default: the cache's static/<source>-<dims>d, "
                                               "where --retriever static finds the MiniLM one)")
    p.set_defaults(func=cmd_distill)
    declare(p, out_dirs=("out",), more_inputs=_source_files, dir_files=_written)

    p = acts.add_parser("list", help="the static models in the cache, with their source, dimensions and hashes")
    _common(p)
    p.set_defaults(func=cmd_list)
    declare(p)  # reads the cache only


# what a distillation reads (the source folder's files) and writes (the model's files in --out): an --out that
# is the source is refused before any work
WRITTEN = ("config.json", "model.safetensors", "modules.json", "tokenizer.json", "berds_static.json")


def _source_files(args) -> list[tuple[str, Path]]:
    from ..embeddings.models import resolve_model

    src = Path(resolve_model(args.source))
    return [("--source", src / name) for name in WRITTEN if (src / name).is_file()]


def _written(args) -> list[Path]:
    return [Path(args.out) / name for name in WRITTEN] if args.out else []


def cmd_distill(args) -> dict:
    from ..embeddings.static import DEFAULT_DIMS, distill
    from ..errors import InputError

    dims = DEFAULT_DIMS if args.dims is None else int(args.dims)
    if not 2 <= dims <= 4096:
        raise InputError("--dims", None, None, f"must be between 2 and 4096, got {dims}")
    return distill(args.source, Path(args.out) if args.out else None, dims)


def cmd_list(args) -> dict:
    from ..embeddings.static import default_static_model, static_dir
    from ..embeddings.static_folder import is_static, static_meta

    found = sorted(p for p in static_dir().iterdir() if is_static(p))
    return {"folder": str(static_dir()), "default": str(default_static_model()),
            "models": [{"path": str(p), **static_meta(p)} for p in found]}
