"""Where a lab keeps its files: the annotation database (``$BERDS_ANNOTATIONS_DB`` or ``annotations/berds.db``,
:func:`default_db_path`) and its own judges (``berds agreement --fit NAME`` writes them, ``--judge lab:NAME``
reads them): ``$BERDS_LAB_JUDGES`` if set, else ``judges/`` beside the annotation database. Light on purpose
(a low layer, no SQLite opened): the judges read it, and the app's sidebar lists the lab's judges on every page
without loading one."""
from __future__ import annotations

import os
import re
from pathlib import Path

ENV_DIR = "BERDS_LAB_JUDGES"
DEFAULT_DB = Path("annotations") / "berds.db"
ENV_DB = "BERDS_ANNOTATIONS_DB"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def default_db_path() -> Path:
    """``$BERDS_ANNOTATIONS_DB`` or ``annotations/berds.db``."""
    return Path(os.environ.get(ENV_DB) or DEFAULT_DB)


def lab_judges_dir(db: str | os.PathLike | None = None) -> Path:
    """Where a lab's judges live: ``$BERDS_LAB_JUDGES``, else ``judges/`` beside the annotation database."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    if db is None:
        db = default_db_path()
    return Path(db).resolve().parent / "judges"


def lab_judge_names(db=None) -> list[str]:
    """The lab judges in the lab folder (``NAME`` of each ``NAME.json`` with a valid name), sorted."""
    try:
        return sorted(p.stem for p in lab_judges_dir(db).glob("*.json") if NAME_RE.match(p.stem))
    except OSError:
        return []


__all__ = ["DEFAULT_DB", "ENV_DB", "ENV_DIR", "NAME_RE", "default_db_path", "lab_judges_dir", "lab_judge_names"]
