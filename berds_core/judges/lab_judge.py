"""``lab:NAME``: the embedded judge refitted on a lab's own labels (``berds agreement --fit``,
:mod:`berds_core.lab.judge_fit`).

A lab judge is the shipped embedded judge (its encoder, stance model, topicality gate and one-side rule: all
frozen) read through a map fitted on one lab's labels: the base judge's probability for a pair (each pair
alone, or a group member's ``g * s``) goes through the lab's calibration map (``none`` | ``platt`` |
``isotonic``), and the lab's threshold and unsure band decide it. Of two opposite perspectives the member the
base rule picked stays the only one that can be "supports" (the map is monotone; the pick is read on the
base probabilities, so a tie the map makes never moves it). A passage off the question's topic stays at 0.

The judge file (JSON, written by the fit into the lab's folder, never over the shipped weights) holds the
map, the base judge (spec, weights file, name), the round it was fitted on and its out-of-fold report; its
name carries the lab's name and the file's digest (``lab-NAME-1a2b3c4d``), so every figure drawn with it
names it and its cached probabilities are its own.

``lab:NAME`` reads ``<lab folder>/judges/NAME.json``: the lab folder is ``$BERDS_LAB_JUDGES`` if set, else the
folder of the annotation database (``$BERDS_ANNOTATIONS_DB`` or ``annotations/berds.db``); ``lab:PATH.json``
reads that file (the command line only; the app takes names).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..files.lab_folder import NAME_RE, lab_judge_names, lab_judges_dir
from .base import JudgeError
from .calibration import apply_calibration
from .embedded import WEIGHTS, EmbeddedJudge
from .one_side import picked

FORMAT = "berds-lab-judge/1"
BASE_WEIGHTS = {"embedded": "embedded_v5.npz", "embedded:v4": "embedded_v4.npz"}  # the bases a lab may refit


def check_name(name: str) -> str:
    """``name`` if it can name a lab judge (a file name, no path), else a one-line JudgeError."""
    if not NAME_RE.match(name or ""):
        raise JudgeError(f"lab judge name {name!r}: letters, digits, '.', '_' or '-', at most 64, no path")
    return name


def lab_judge_path(arg: str, db=None) -> Path:
    """The file ``lab:ARG`` names: a ``.json`` path as given, else ``NAME.json`` in the lab folder."""
    arg = (arg or "").strip()
    if arg.endswith(".json"):
        return Path(arg)
    return lab_judges_dir(db) / f"{check_name(arg)}.json"


def read_lab_judge(path: Path) -> dict:
    """The judge file, checked: one line naming the file and the field that is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JudgeError(f"lab judge {path}: no such file (write one with berds agreement --fit NAME)") from None
    except (OSError, ValueError) as e:
        raise JudgeError(f"lab judge {path}: unreadable ({type(e).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise JudgeError(f"lab judge {path}: field 'format' must be {FORMAT!r}")
    try:
        m, base = data["map"], data["base"]
        float(m["threshold"])
        lo, hi = (float(v) for v in m["band"])
        apply_calibration(m["calibration"], np.array([0.5]))
        if base["spec"] not in BASE_WEIGHTS:
            raise ValueError(f"base spec {base['spec']!r}")
        check_name(data["name"])
    except JudgeError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise JudgeError(f"lab judge {path}: field {e} missing or wrong") from None
    return data


class LabJudge(EmbeddedJudge):
    what = "the embedded judge refitted on a lab's labels"
    backend = "lab"

    def __init__(self, path, threshold: float | None = None, device: str | None = None, batch_size: int = 64,
                 encoding: str | None = "auto"):
        self.path = Path(path)
        self.lab = read_lab_judge(self.path)
        self.digest = hashlib.sha256(self.path.read_bytes()).hexdigest()[:8]
        base = self.lab["base"]
        super().__init__(device=device, batch_size=batch_size, encoding=encoding,
                         weights=str(WEIGHTS.with_name(BASE_WEIGHTS[base["spec"]])))
        m = self.lab["map"]
        self.map = m["calibration"]
        self.threshold = float(m["threshold"]) if threshold is None else float(threshold)
        lo, hi = (float(v) for v in m["band"])
        self.band = (min(lo, self.threshold), max(hi, self.threshold))
        self.group_band = self.band if self.one_side is not None else None

    def _name_stem(self) -> str:
        stem = f"lab-{self.lab['name']}-{self.digest}"
        return stem if self.encoding == "fp32" else f"{stem}-{self.encoding}"

    def status(self) -> dict:
        rep = (self.lab.get("report") or {}).get("after") or {}
        detail = (f"lab judge {self.lab['name']}: {self.lab['base']['name']} refitted on {self.lab['round']['name']} "
                  f"({self.lab['round']['questions']} questions)")
        if rep.get("kappa") is not None:
            detail += f", out-of-fold kappa {rep['kappa']:.2f}, F1 {rep['f1']:.2f} on that round"
        return {"ok": True, "detail": detail}

    def mapped(self, p) -> np.ndarray:
        """The lab's map of base probabilities; 0 (a passage off the topic, or no support) stays 0."""
        p = np.asarray(p, float)
        return np.where(p > 0, apply_calibration(self.map, p), 0.0)

    def _score(self, pairs):
        return self.mapped(super()._score(pairs))

    def decide(self, question, docs, perspectives, probs, labels, groups):
        """The base rule's pick of each group, the lab's map and threshold on the picked member."""
        P0, L0 = super().decide(question, docs, perspectives, probs, labels, groups)
        if self.one_side is None or not groups or not len(docs):
            return P0, L0
        members = sorted({k for group in groups for k in group})
        P, L = np.array(P0, float, copy=True), np.array(L0, bool, copy=True)
        P[:, members] = self.mapped(P0[:, members])
        L[:, members] = (picked(P0, groups) & (P >= self.threshold))[:, members]
        return P, L


__all__ = ["FORMAT", "LabJudge", "lab_judge_names", "lab_judge_path", "lab_judges_dir", "read_lab_judge", "check_name", "BASE_WEIGHTS"]
