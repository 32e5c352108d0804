"""Which server files a visitor of the app may name: only those under configured roots.

The CLI reads whatever path its user gives (the user owns the machine). The
app is different: whoever reaches the page is not the machine's owner, so a
path typed into a page is resolved (symlinks and ``..`` included) and refused
unless it lies under one of the *allowed roots*, before anything is opened or
created. Files a visitor brings come by upload instead.

Allowed roots, in order (the first is where relative paths resolve):

1. ``BERDS_DATA_ROOTS``: folders the operator lists, separated by ``os.pathsep``
   (``:`` on Linux);
2. the annotations folder (``annotations/`` beside the app, or the folder of
   ``BERDS_ANNOTATIONS_DB``) -- not in lab mode: there that folder holds the
   lab's database (accounts, every annotator's labels) and whatever an admin
   exported beside it, so no typed path may reach into it, even through a
   root listed above it;
3. the cache's ``uploads`` folder (where uploaded files are stored).

Models are named the same way (``hf:<model>``, an embedder): a hub id
(``org/name``) passes, anything that reads as a path -- or names something
that exists beside the app -- goes through the same check
(:func:`resolve_user_model`), so a typed model cannot open or probe server
folders either.

Error messages never quote a file's contents and never list the server's
folders to the visitor; they say what to do instead.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import InputError
from ..runtime.mode import lab_mode
from .cache import cache_dir

ENV_ROOTS = "BERDS_DATA_ROOTS"
APP_DIR = Path(__file__).resolve().parents[2]


def annotations_root() -> Path:
    db = os.environ.get("BERDS_ANNOTATIONS_DB")
    return Path(db).resolve().parent if db else (APP_DIR / "annotations").resolve()


def forbidden_roots() -> list[Path]:
    """Folders no typed path may reach, even under an allowed root: in lab mode, the folder of the lab's
    database (the accounts, every annotator's labels, exports an admin left beside it)."""
    return [annotations_root()] if lab_mode() else []


def allowed_roots() -> list[Path]:
    """The folders the app may read from or write to, resolved (existing or not); in lab mode without the
    lab database's folder (:func:`forbidden_roots`)."""
    roots = [Path(p).expanduser().resolve() for p in os.environ.get(ENV_ROOTS, "").split(os.pathsep) if p.strip()]
    roots += [annotations_root(), (cache_dir("uploads")).resolve()]
    banned = forbidden_roots()
    return [r for r in dict.fromkeys(roots) if r not in banned]


def is_allowed(path: Path, roots: list[Path] | None = None) -> bool:
    resolved = Path(path).resolve()
    if any(resolved == b or resolved.is_relative_to(b) for b in forbidden_roots()):
        return False
    return any(resolved == r or resolved.is_relative_to(r) for r in (roots or allowed_roots()))


def resolve_user_path(text: str, *, what: str = "path", must_exist: bool = True,
                      roots: list[Path] | None = None) -> Path:
    """A path typed into the app -> an absolute path under an allowed root, or InputError.

    ``what`` names the field in the error (``"corpus path"``). Relative paths
    resolve against the first allowed root. Nothing is read or created here;
    ``must_exist`` only checks existence (after the root check, so the answer
    never tells whether a forbidden file exists).
    """
    raw = str(text or "").strip()
    if not raw:
        raise InputError(what, None, None, "is empty")
    if "\x00" in raw:
        raise InputError(what, None, None, "contains a NUL character")
    roots = roots or allowed_roots()
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = roots[0] / p
    resolved = p.resolve()
    if not is_allowed(resolved, roots):
        raise InputError(what, None, None,
                         f"'{raw}' is outside the folders this app may open; upload the file instead, "
                         f"or ask the operator to add its folder to {ENV_ROOTS}")
    if must_exist and not resolved.exists():
        raise InputError(what, None, None, f"'{raw}' does not exist")
    return resolved


_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(?:/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")


def resolve_user_model(text: str, *, what: str = "model path", roots: list[Path] | None = None) -> str:
    """A model typed into the app -> a hub id as typed, or an absolute folder under an allowed root.

    A hub id (``name`` or ``org/name``, no ``..``) that does not exist as a
    local path passes unchanged (the loader fetches it from the hub or its
    cache). Anything else -- ``/...``, ``./...``, ``~/...``, a name that exists
    beside the app -- is a path: :func:`resolve_user_path` (allowed roots
    only, the same error for a missing and a forbidden folder outside them).
    """
    raw = str(text or "").strip()
    if _HUB_ID.fullmatch(raw) and ".." not in raw and not Path(raw).exists():
        return raw
    return str(resolve_user_path(raw, what=what, roots=roots))
