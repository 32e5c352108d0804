"""Golden outputs: every ``berds`` verb on the built-in demo bundle prints and writes what was recorded
in ``tests/golden/`` (rankings, scores, judged labels, metrics, exports). Kept as the regression test of
the engine's restructuring: a change that moves code must not move a number. ``BERDS_UPDATE_GOLDEN=1``
re-records after a change meant to change an output (review the diff of ``tests/golden/``).

Every encoder runs in fp32 (``BERDS_ENCODING=fp32``) so the figures are the same on CPUs with and
without native bf16. The development corpora's rankings (``../shared/data``) are checked by
``test_golden_dev_corpora`` when that folder is there.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from golden_harness import check, record, scrub

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="module")
def fp32(tmp_path_factory):
    """fp32 encoders and a cache of this module's own: a cache filled by earlier tests changes which pairs
    share an encoder batch, and batch shapes move float sums by ~1e-7, enough to swap near-tied picks."""
    saved = {k: os.environ.get(k) for k in ("BERDS_ENCODING", "BERDS_CACHE")}
    os.environ["BERDS_ENCODING"] = "fp32"
    os.environ["BERDS_CACHE"] = str(tmp_path_factory.mktemp("golden-cache"))
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _demo_steps(t: Path) -> list[tuple[str, list[str], list[str]]]:
    """(name, argv, files written) in the order they run; later steps read earlier outputs."""
    d, r = t / "d", t / "r"
    qs, corpus, gold = str(d / "questions.jsonl"), str(d / "corpus.jsonl"), str(d / "gold.jsonl")
    base = ["--questions", qs, "--corpus", corpus, "--k", "10", "--quiet", "--json"]
    run = lambda name: str(r / f"{name}.jsonl")  # noqa: E731
    db = str(t / "lab.db")
    steps = [
        ("import_demo", ["import", "demo", "--out", str(d), "--json"],
         ["d/questions.jsonl", "d/corpus.jsonl", "d/gold.jsonl"]),
        ("index_bm25", ["index", "--corpus", corpus, "--retriever", "bm25", "--json", "--quiet"], []),
        ("retrieve_bm25", ["retrieve", *base, "--retriever", "bm25", "--out", run("bm25")], ["r/bm25.jsonl"]),
        ("retrieve_dense", ["retrieve", *base, "--retriever", "dense", "--out", run("dense")], ["r/dense.jsonl"]),
        ("retrieve_mmr", ["retrieve", *base, "--retriever", "bm25", "--mmr", "0.5", "--candidates", "30",
                          "--out", run("mmr")], ["r/mmr.jsonl"]),
        ("retrieve_qe", ["retrieve", *base, "--retriever", "bm25", "--qe", "offline", "--out", run("qe")],
         ["r/qe.jsonl"]),
        ("retrieve_qe_dataset", ["retrieve", *base, "--retriever", "dense", "--qe", "dataset",
                                 "--out", run("qe_dataset")], ["r/qe_dataset.jsonl"]),
        ("retrieve_coverage", ["retrieve", *base, "--retriever", "dense", "--rerank", "coverage",
                               "--candidates", "20", "--alpha", "0.3", "--out", run("coverage")],
         ["r/coverage.jsonl"]),
        ("retrieve_coverage_model", ["retrieve", *base, "--retriever", "dense", "--rerank", "coverage",
                                     "--rerank-probs", "model", "--candidates", "10", "--keep", "2", "--alpha", "0.1",
                                     "--out", run("coverage_model")], ["r/coverage_model.jsonl"]),
        ("retrieve_coverage_union", ["retrieve", *base, "--retriever", "bm25", "--rerank", "coverage",
                                     "--candidates-from", "union", "--candidates", "15",
                                     "--out", run("coverage_union")], ["r/coverage_union.jsonl"]),
        ("retrieve_xquad", ["retrieve", *base, "--retriever", "bm25", "--rerank", "xquad",
                            "--perspectives-from", "dataset", "--out", run("xquad")], ["r/xquad.jsonl"]),
        ("retrieve_pm2", ["retrieve", *base, "--retriever", "dense", "--rerank", "pm2",
                          "--perspectives-from", "offline", "--out", run("pm2")], ["r/pm2.jsonl"]),
        ("retrieve_preset", ["retrieve", *base, "--preset", "diverse", "--out", run("preset")], ["r/preset.jsonl"]),
        ("retrieve_preset_k20", ["retrieve", "--questions", qs, "--corpus", corpus, "--k", "20", "--quiet", "--json",
                                 "--preset", "diverse", "--out", run("preset20")], ["r/preset20.jsonl"]),
        ("evaluate_bm25", ["evaluate", "--run", run("bm25"), "--gold", gold, "--k", "5", "--json", "--quiet"], []),
        ("evaluate_ks", ["evaluate", "--run", run("dense"), "--gold", gold, "--ks", "1,3,5,10", "--json", "--quiet"],
         []),
        ("evaluate_compare", ["evaluate", "--run", run("bm25"), "--gold", gold, "--compare", run("dense"),
                              run("xquad"), run("preset"), "--json", "--quiet"], []),
        ("judge_embedded", ["judge", "--run", run("bm25"), "--judge", "embedded", "--out", run("bm25.judged"),
                            "--json", "--quiet"], ["r/bm25.judged.jsonl"]),
        ("judge_embedded_dense", ["judge", "--run", run("dense"), "--judge", "embedded",
                                  "--out", run("dense.judged"), "--json", "--quiet"], ["r/dense.judged.jsonl"]),
        ("evaluate_labels", ["evaluate", "--run", run("bm25.judged"), "--labels", "{judge}", "--k", "5",
                             "--json", "--quiet"], []),
        ("leaning_gold", ["leaning", "--run", run("dense"), "--gold", gold, "--k", "5", "--json", "--quiet"], []),
        ("leaning_labels", ["leaning", "--run", run("bm25.judged"), "--labels", "{judge}", "--k", "5",
                            "--json", "--quiet"], []),
        ("sycophancy", ["sycophancy", "--questions", qs, "--corpus", corpus, "--retriever", "bm25", "--gold", gold,
                        "--k", "5", "--json", "--quiet"], []),
        ("coverage", ["coverage", "--runs", run("bm25"), run("dense"), "--gold", gold, "--per-question",
                      "--json", "--quiet"], []),
        ("export_trec", ["export-trec", "--run", run("bm25"), run("dense"), "--gold", gold,
                         "--out-dir", str(t / "trec"), "--json", "--quiet"],
         ["trec/"]),
        ("judge_eval", ["judge-eval", "--pairs", str(t / "pairs.tsv"), "--judge", "embedded",
                        "--out", str(t / "pairs.judged.tsv"), "--json", "--quiet"], ["pairs.judged.tsv"]),
        ("annotations_import_a1", ["annotations", "import", "--db", db, "--pairs", str(t / "pairs.tsv"),
                                   "--annotator", "a1", "--json", "--quiet"], []),
        ("annotations_import_a2", ["annotations", "import", "--db", db, "--pairs", str(t / "pairs_a2.tsv"),
                                   "--annotator", "a2", "--task-set", "pairs", "--json", "--quiet"], []),
        ("annotations_export_tsv", ["annotations", "export", "--db", db, "--format", "tsv",
                                    "--out", str(t / "labels.tsv"), "--json", "--quiet"], ["labels.tsv"]),
        ("annotations_export_jsonl", ["annotations", "export", "--db", db, "--format", "jsonl",
                                      "--out", str(t / "labels.jsonl"), "--json", "--quiet"], ["labels.jsonl"]),
        ("agreement", ["agreement", "--db", db, "--judge", "embedded", "--n-boot", "200", "--seed", "0",
                       "--json", "--quiet"], []),
        ("annotations_demo", ["annotations", "demo", "--db", str(t / "demo.db"), "--annotators", "x,y",
                              "--redundancy", "2", "--seed", "0", "--json", "--quiet"], []),
        # the demo queue's pairs carry reference labels only: the judge runs on them (issue 39: the CLI judges
        # the same labelled pairs as the Agreement page, reference labels included)
        ("agreement_reference", ["agreement", "--db", str(t / "demo.db"), "--judge", "embedded", "--n-boot", "200",
                                 "--seed", "0", "--json", "--quiet"], []),
    ]
    return steps


def _write_pairs(t: Path) -> None:
    """A human-pairs TSV from the demo's gold labels (every passage of two runs' top 3 against each
    perspective), and a second annotator's copy that disagrees on every fifth pair."""
    corpus = {json.loads(x)["id"]: json.loads(x) for x in (t / "d" / "corpus.jsonl").read_text().splitlines() if x}
    gold = [json.loads(x) for x in (t / "d" / "gold.jsonl").read_text().splitlines() if x]
    supports = {(g["passage_id"], g["perspective"]) for g in gold}
    rows = []
    for line in (t / "r" / "bm25.jsonl").read_text().splitlines()[:8]:
        q = json.loads(line)
        for c in q["ctxs"][:3]:
            for j, p in enumerate(q["perspectives"]):
                rows.append([q["question"], f"{c['id']}~{j}", corpus[c["id"]]["text"], p, int((c["id"], j) in supports)])
    for name, flip in (("pairs.tsv", False), ("pairs_a2.tsv", True)):
        with open(t / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter="\t")
            w.writerow(["question", "id", "document", "perspective", "label"])
            for i, row in enumerate(rows):
                w.writerow(row[:4] + [1 - row[4] if flip and i % 5 == 0 else row[4]])


@pytest.fixture(scope="module")
def demo_results(tmp_path_factory, fp32):
    t = tmp_path_factory.mktemp("golden")
    results = {}
    for name, argv, outputs in _demo_steps(t):
        if name == "judge_eval":
            _write_pairs(t)
        judge = (results.get("judge_embedded") or {}).get("json", {}).get("judge", "embedded")
        argv = [a.replace("{judge}", judge) for a in argv]  # the name `berds judge` printed
        results[name] = record(name, argv, t, outputs)
    return results


STEP_NAMES = [name for name, _, _ in _demo_steps(Path("/x"))]


@pytest.mark.slow
@pytest.mark.parametrize("name", STEP_NAMES)
def test_golden_demo(demo_results, name):
    check(f"demo_{name}", demo_results[name])


def _dev_steps(t: Path) -> list[tuple[str, list[str], list[str]]]:
    procon = t / "procon"
    qs, corpus, gold = str(procon / "questions.jsonl"), str(procon / "corpus.jsonl"), str(procon / "gold.jsonl")
    base = ["--questions", qs, "--corpus", corpus, "--k", "10", "--quiet", "--json"]
    return [
        ("import_procon", ["import", "debate-sites", str(SHARED / "debate-sites" / "procon.json"), "--out",
                           str(procon), "--json", "--quiet"], []),
        ("retrieve_bm25", ["retrieve", *base, "--retriever", "bm25", "--out", str(t / "bm25.jsonl")], ["bm25.jsonl"]),
        ("retrieve_dense", ["retrieve", *base, "--retriever", "dense", "--out", str(t / "dense.jsonl")],
         ["dense.jsonl"]),
        ("retrieve_preset", ["retrieve", *base, "--preset", "diverse", "--out", str(t / "preset.jsonl")],
         ["preset.jsonl"]),
        ("retrieve_mmr", ["retrieve", *base, "--retriever", "dense", "--mmr", "0.5", "--out", str(t / "mmr.jsonl")],
         ["mmr.jsonl"]),
        ("evaluate_compare", ["evaluate", "--run", str(t / "bm25.jsonl"), "--gold", gold, "--compare",
                              str(t / "dense.jsonl"), str(t / "preset.jsonl"), str(t / "mmr.jsonl"),
                              "--json", "--quiet"], []),
    ]


@pytest.mark.slow
def test_golden_dev_corpora(tmp_path, fp32):
    """The development debate corpus (procon): rankings and metrics of the main verbs. Only ids and
    scores are recorded (the texts stay in ../shared)."""
    if not (SHARED / "debate-sites" / "procon.json").exists():
        pytest.skip("../shared/data is not beside this checkout")
    for name, argv, outputs in _dev_steps(tmp_path):
        got = record(name, argv, tmp_path, outputs, fresh=True)  # as a user runs them: one process each
        for f in got.get("files", {}).values():
            for q in f.get("run", []):
                for key in ("question", "perspectives", "answers", "stances"):
                    q.pop(key, None)
        # where the data folder is differs per machine; the longer spelling first (one may contain the other)
        for folder in sorted({str(SHARED), str(SHARED.resolve())}, key=len, reverse=True):
            got = scrub(got, folder, "{data}")
        check(f"dev_{name}", got)
