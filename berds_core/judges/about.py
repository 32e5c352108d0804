"""What a judge measures, in words for the pages and reports: its label ("supports", "close", "on topic") and
the caveat shown beside its verdicts (:func:`describe_judge`)."""
from __future__ import annotations

from .cross_encoder import HEAD_WEIGHTS
from .embedded import judge_report


def describe_judge(spec_or_judge) -> dict:
    """What a judge measures, for the app and reports: ``{"stance": bool, "label": str, "caveat": str|None}``
    for a judge, a spec (``embedded``) or a stored judge name (``embedded-cos-v4-...``).

    The ``embedded`` judge reads how close a passage is to a perspective (a calibrated MiniLM cosine, gated on
    the question's topic): it cannot tell a passage for a perspective from one against it, so its positives
    are labelled "close", not "supports"; its out-of-fold figures on the BERDS human pairs come from its
    weights. Names of earlier embedded judges stored in runs and databases keep what they measured:
    ``embedded-minilm-...`` (cosine, topicality) and ``embedded-stance-...`` (the stance model, issue 28).
    """
    backend = getattr(spec_or_judge, "backend", None)
    text = str(spec_or_judge or "").strip()
    if backend is None and text.startswith("embedded-minilm"):
        return {"stance": False, "label": "on topic",
                "caveat": "Judged by an earlier offline embedded judge that measured topicality, not stance: "
                          "it could not tell a passage for a perspective from one against it."}
    if backend is None and text.startswith("embedded-stance"):
        return {"stance": True, "label": "supports",
                "caveat": "Judged by an earlier offline embedded judge, the studio's stance model (out of fold "
                          "on the BERDS human pairs' development half: F1 0.29, kappa 0.08, below the cosine "
                          "judge that replaced it)."}
    if backend is None and (text in ("embedded", "default") or text.startswith(("embedded-", "embedded:"))):
        backend = "embedded"  # a spec, or a judge name as stored in runs and annotation databases
    if backend == "embedded":
        cv = judge_report()
        one_side = judge_report(part="median")
        fig = (f" Out of fold on the BERDS human pairs' development half: F1 {cv['f1']:.2f}, precision "
               f"{cv['precision']:.2f}, recall {cv['recall']:.2f}, Cohen's kappa {cv['kappa']:.2f}, calibration "
               f"error {cv['ece']:.2f}" + (f" (medians over five fold assignments: F1 {one_side['f1']:.2f}, kappa "
                                          f"{one_side['kappa']:.2f})" if one_side else "")
               + " (the paper's fine-tuned evaluator: F1 0.62).") if cv else ""
        sides = (" Of two opposite perspectives (a statement and its negation) it counts a passage for at most "
                 "one: the side the studio's stance model reads.") if one_side else ""
        return {"stance": False, "label": "close",
                "caveat": "The offline embedded judge reads how close a passage is to a perspective (MiniLM "
                          "cosine, calibrated; passages off the question's topic support nothing): alone it cannot "
                          "tell a passage for a perspective from one against it." + sides + fig +
                          " For the paper's figures, use berds-evaluator (the paper's evaluator), hf:<model> or "
                          "openai:<model>@<url>."}
    if backend is None and (text == "argkp" or text.startswith("argkp-ce-")):
        backend = "argkp"
    if backend == "argkp":
        cv, v4 = judge_report(str(HEAD_WEIGHTS)), judge_report()
        fig = (f" Out of fold on the BERDS human pairs' development half: F1 {cv['f1']:.2f}, Cohen's kappa "
               f"{cv['kappa']:.2f}, calibration error {cv['ece']:.2f}" +
               (f" (the default embedded judge: F1 {v4['f1']:.2f}, kappa {v4['kappa']:.2f})" if v4 else "")
               + ".") if cv else ""
        return {"stance": True, "label": "supports",
                "caveat": "The offline ArgKP judge is a MiniLM cross-encoder trained to tell whether a crowd "
                          "argument expresses a key point (IBM ArgKP), its match logit read beside the cosine and "
                          "calibrated on the BERDS human pairs; on BERDS's passages it is below the default judge "
                          "(docs/judge.md); passages off the question's topic support nothing." + fig}
    return {"stance": True, "label": "supports", "caveat": None}
