"""Where a lab's own judges live (``berds agreement --fit NAME`` writes them, ``--judge lab:NAME`` reads them):
``$BERDS_LAB_JUDGES`` if set, else ``judges/`` beside the annotation database (``$BERDS_ANNOTATIONS_DB`` or
``annotations/berds.db``). Light on purpose: the app's sidebar lists them on every page without loading a
judge."""
from __future__ import annotations

import os
import re
from pathlib import Path

ENV_DIR = "BERDS_LAB_JUDGES"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def lab_judges_dir(db: str | os.PathLike | None = None) -> Path:
    """Where a lab's judges live: ``$BERDS_LAB_JUDGES``, else ``judges/`` beside the annotation database."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    if db is None:
        from .db import default_db_path

        db = default_db_path()
    return Path(db).resolve().parent / "judges"


def lab_judge_names(db=None) -> list[str]:
    """The lab judges in the lab folder (``NAME`` of each ``NAME.json`` with a valid name), sorted."""
    try:
        return sorted(p.stem for p in lab_judges_dir(db).glob("*.json") if NAME_RE.match(p.stem))
    except OSError:
        return []


__all__ = ["ENV_DIR", "NAME_RE", "lab_judges_dir", "lab_judge_names"]
