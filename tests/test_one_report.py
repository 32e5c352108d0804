"""One configuration, one set of figures on both faces (issue 54): the first demo questions, dense + the diverse
preset, labels from the embedded judge, scored through the command line (``berds retrieve``, ``berds judge``,
``berds evaluate``) and through the Evaluate page give the same rankings, the same per-question figures and the
same label policy name, under the default policy and under the other one; ``berds sycophancy`` and the Leaning
page give the same p, n and Δ for one configuration and name the same policy."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from berds_core.diversify.methods import LABELS

pytest.importorskip("streamlit")

from test_app_pages import ROOT, _app, _data_roots, _open, entry  # noqa: E402,F401

MEASURES = ("mrecall@5", "precision@5", "mrecall@10", "precision@10")


def berds(*argv, cwd) -> dict:
    r = subprocess.run([sys.executable, "-m", "berds_core", *map(str, argv), "--json"], cwd=cwd, capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    berds("import", "demo", "--out", "demo", "--force", cwd=d)
    return d


def test_the_evaluate_page_and_berds_evaluate_give_one_report(_app, demo):
    from berds_core.runs import DEFAULT_POLICY, POLICIES

    at = _open(_app(), "pages/evaluate.py")
    at.multiselect(key="ev_subsets").set_value(["technology", "society"]).run()  # the first demo questions
    at.selectbox(key="ev_method").set_value("preset").run()
    at.radio(key="ev_labels").set_value("judge").run()
    assert at.radio(key="ev_policy").value == DEFAULT_POLICY == "threshold"
    assert list(at.radio(key="ev_policy").options) == list(POLICIES)
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = at.session_state["eval_done"]
    (label,) = done
    page = {DEFAULT_POLICY: done[label]}
    at.radio(key="ev_policy").set_value("confident").run()  # the same run, scored under the other policy
    assert not at.exception, [e.value for e in at.exception]
    (other,) = [c for c in at.session_state["eval_done"] if c != label]
    page["confident"] = at.session_state["eval_done"][other]
    ids = page[DEFAULT_POLICY]["ids"]
    assert ids[0] == "a-q01" and len(ids) >= 2

    questions = demo / "first.jsonl"
    by_id = {json.loads(line)["id"]: line for line in (demo / "demo/questions.jsonl").read_text().splitlines()}
    questions.write_text("".join(by_id[q] + "\n" for q in ids))
    berds("retrieve", "--questions", questions, "--corpus-per-question", "demo/corpora", "--retriever", "dense",
          "--preset", "diverse", "--k", 10, "--out", "run.jsonl", "--quiet", cwd=demo)
    judged = berds("judge", "--run", "run.jsonl", "--judge", "embedded", "--out", "judged.jsonl", "--quiet", cwd=demo)
    assert judged["policy"] == DEFAULT_POLICY
    run = [json.loads(line) for line in (demo / "judged.jsonl").read_text().splitlines()]
    store = at.session_state["eval_runs"][page[DEFAULT_POLICY]["key"]]
    assert [[c["id"] for c in e["ctxs"]] for e in run] == [[c["id"] for c in store[q]["ctxs"]] for q in ids]
    assert all(e[f"{judged['judge']}-policy"] == "threshold" and f"{judged['judge']}-band" in e for e in run)
    for policy, shown in page.items():
        cli = berds("evaluate", "--run", "judged.jsonl", "--labels", judged["judge"], "--policy", policy,
                    "--per-question", "--bootstrap", 0, cwd=demo)
        assert cli["policy"] == shown["policy"] == policy
        assert [q["id"] for q in cli["per_question"]] == shown["ids"]
        for m in MEASURES:
            assert shown["per_q"][m] == pytest.approx([q[m] for q in cli["per_question"]], abs=1e-9), (policy, m)
        head = next(row for row in shown["summary"] if row["subset"] == "all questions")  # Report.to_table
        assert head["mrecall@5"]["mean"] == pytest.approx(cli["mrecall"], abs=1e-9)
        assert head["precision@5"]["mean"] == pytest.approx(cli["precision"], abs=1e-9)
    assert any("policy confident" in c.value for c in at.caption)


def test_the_leaning_page_and_berds_sycophancy_give_one_report(_app, demo):
    from berds_core.eval.leaning import QUERY_FORMS
    from berds_core.runs import DEFAULT_POLICY

    first = [json.loads(line) for line in (demo / "demo/questions.jsonl").read_text().splitlines()]
    two = [q for q in first if len(q["perspectives"]) == 2][:3]
    qf = demo / "two.jsonl"
    qf.write_text("".join(json.dumps(q) + "\n" for q in two))
    cf = demo / "demo/corpus.jsonl"

    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(qf)).run()
    at.selectbox(key="sb_corpus").set_value("File path").run()
    at.text_input(key="sb_corpus_path").set_value(str(cf)).run()
    at.switch_page(str(ROOT / "pages/leaning.py"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.multiselect(key="ln_configs").set_value([f"dense {LABELS['none']}"]).run()
    assert at.radio(key="ln_policy").value == DEFAULT_POLICY
    assert not at.exception, [e.value for e in at.exception]
    syc = next(df.value for df in at.dataframe if "delta" in df.value.columns)
    assert any(f"policy {DEFAULT_POLICY}" in c.value for c in at.caption)

    cli = berds("sycophancy", "--questions", qf, "--corpus", cf, "--retriever", "dense", "--judge", "embedded",
                "--k", 5, "--quiet", cwd=demo)
    assert cli["policy"] == DEFAULT_POLICY
    forms = {"question": "the question", "support": "the supporting perspective",
             "oppose": "the opposing perspective"}
    for form in QUERY_FORMS:
        row = syc[syc["query"] == forms[form]].iloc[0]
        assert row["questions"] == cli[form]["n"] == 3
        assert row["p"] == pytest.approx(cli[form]["p"], abs=1e-9)
        assert row["n"] == pytest.approx(cli[form]["n_share"], abs=1e-9)
        if cli[form]["delta"] is None:
            assert row["delta"] is None or row["delta"] != row["delta"]  # NaN in the table
        else:
            assert row["delta"] == pytest.approx(cli[form]["delta"], abs=1e-3)


def test_the_evaluate_page_runs_rvr_as_berds_retrieve_does(_app, demo, monkeypatch):
    """The pickers offer every registered method; the page's retrieve-verify-retrieve column ranks the first
    demo questions as ``berds retrieve --pipeline bm25%DEPTH>>rvr`` does (the sidebar's default retriever)."""
    from berds_core.diversify.stages import RetrieveVerifyRetrieve
    from berds_core.retrieval.caching import DEFAULT_DEPTH

    applied = []  # the stage runs on the page (on the demo it reorders nothing: both sides are in every top 5)
    real_rerank = RetrieveVerifyRetrieve.rerank
    monkeypatch.setattr(RetrieveVerifyRetrieve, "rerank",
                        lambda self, q, c: applied.append(q.text) or real_rerank(self, q, c))
    at = _open(_app(), "pages/evaluate.py")
    assert "rvr" in at.selectbox(key="ev_method").options or LABELS["rvr"] in at.selectbox(key="ev_method").options
    at.multiselect(key="ev_subsets").set_value(["technology"]).run()
    at.selectbox(key="ev_method").set_value("rvr").run()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (label,) = at.session_state["eval_done"]
    assert LABELS["rvr"] in label and "bm25" in label  # the sidebar's retriever
    shown = at.session_state["eval_done"][label]
    ids = shown["ids"]
    assert ids and ids[0] == "a-q01"
    assert len(applied) == len(ids)
    by_id = {json.loads(line)["id"]: line for line in (demo / "demo/questions.jsonl").read_text().splitlines()}
    (demo / "rvr_questions.jsonl").write_text("".join(by_id[q] + "\n" for q in ids))
    berds("retrieve", "--questions", "rvr_questions.jsonl", "--corpus-per-question", "demo/corpora", "--pipeline",
          f"bm25%{DEFAULT_DEPTH}>>rvr", "--k", 10, "--out", "rvr.jsonl", "--quiet", cwd=demo)
    run = [json.loads(line) for line in (demo / "rvr.jsonl").read_text().splitlines()]
    store = at.session_state["eval_runs"][shown["key"]]
    assert [[c["id"] for c in e["ctxs"]] for e in run] == [[c["id"] for c in store[q]["ctxs"]][:10] for q in ids]
