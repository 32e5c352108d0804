"""One runner (issue 64, item 1): ``berds_core.experiment.run`` / ``rankings`` rank every face's questions. The
faces (the CLI, the pages, ``studio_ui``, ``berds_core.studio``, the Answers engine) never search a retriever,
run a pipeline or prefetch themselves; plain retrieval is the ``none`` pipeline; questions on one corpus are
one group (the plain pipeline: one search call for the group); a question with nothing to search gets an empty
ranking; and what the CLI writes, the Playground's column shows, for the same pipeline."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from berds_core.corpora.memory import corpus_from_passages
from berds_core.diversify import Pipeline, Using, diversify
from berds_core.experiment import Searched, rankings, run
from berds_core.judges import Judge
from berds_core.records import Passage, Question
from berds_core.retrieval import get_retriever

ROOT = Path(__file__).resolve().parents[1]
FACES = [*(ROOT / "pages").glob("*.py"), *(ROOT / "studio_ui").rglob("*.py"), ROOT / "app.py",
         *(ROOT / "berds_core" / "studio").rglob("*.py"), *(ROOT / "berds_core" / "cli").rglob("*.py"),
         *(ROOT / "berds_core" / "answers").rglob("*.py")]
# what only the runner calls: a retriever's search, the pipeline's step and its prefetch, the old runners
RUNNER_CALLS = {"search", "diversify", "prefetch", "retrieve_run", "ranked_entries"}

TEXTS = ["Nuclear plants make power from uranium with no carbon emissions.",
         "Nuclear waste stays dangerous for thousands of years; nobody wants it nearby.",
         "Wind and solar are now cheaper than a new nuclear plant.",
         "School uniforms reduce bullying because students cannot judge clothes.",
         "Zoos protect endangered animals through breeding programs.",
         "A nuclear accident can leave a region empty for decades.",
         "Uniforms cost families money they could spend on other school needs.",
         "Nuclear energy is steady when the wind does not blow."]
QUESTIONS = [Question("q1", "Should we build more nuclear power plants?",
                      ["Nuclear power is clean energy.", "Nuclear power is too dangerous."]),
             Question("q2", "Should schools require uniforms?", ["Uniforms reduce bullying.", "Uniforms cost money."]),
             Question("q3", "Are zoos good for animals?", ["Zoos protect species.", "Zoos confine animals."])]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def corpus():
    return corpus_from_passages([Passage(f"p{i}", f"t{i}", t) for i, t in enumerate(TEXTS)], "runner")


class Counting:
    """A retriever that counts its search calls (and the queries of each)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def search(self, queries, k):
        self.calls.append(list(queries))
        return self.inner.search(queries, k)


def calls_in(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in RUNNER_CALLS:
                out.append((node.lineno, name))
    return out


def test_no_face_runs_a_configuration_itself():
    found = [f"{p.relative_to(ROOT)}:{line} {name}()" for p in FACES if p.exists() for line, name in calls_in(p)]
    assert found == [], "a face ranks by itself; call berds_core.experiment.run / rankings:\n" + "\n".join(found)


def test_the_scan_sees_a_face_that_searches(tmp_path):
    bad = tmp_path / "page.py"
    bad.write_text("hits = engine.retriever.search([q], 5)\nrows = diversify(q, c, r, 'mmr', 5)\nok = run(qs)\n")
    assert calls_in(bad) == [(1, "search"), (2, "diversify")]


def test_plain_retrieval_is_the_none_pipeline_searched_once_per_corpus(corpus):
    r = Counting(get_retriever("bm25", corpus, progress=False))
    entries = run(QUESTIONS, "none", 3, Searched(corpus, r))
    assert len(r.calls) == 1 and r.calls[0] == [q.question for q in QUESTIONS]  # one call for the group
    want = r.inner.search([q.question for q in QUESTIONS], 3)
    assert [[c["id"] for c in e["ctxs"]] for e in entries] == [[corpus.ids[x] for x in h.rows.tolist()] for h in want]
    assert [e["id"] for e in entries] == ["q1", "q2", "q3"] and entries[1]["ctxs"][0]["id"] == "p3"
    assert run(QUESTIONS, Pipeline(), 3, Searched(corpus, r)) == entries  # the empty pipeline is the same


def test_a_reranking_pipeline_is_what_the_pipeline_step_gives_one_question_at_a_time(corpus):
    r = get_retriever("bm25", corpus, progress=False)
    got = rankings(QUESTIONS, "%5>>mmr(lam=0.5)", 3, Searched(corpus, r))
    for q, h in zip(QUESTIONS, got):
        one = diversify(q, corpus, r, "%5>>mmr(lam=0.5)", 3, using=Using())
        assert h.rows.tolist() == one.rows.tolist()


def test_questions_in_their_own_pools_and_none_to_search(corpus):
    other = corpus_from_passages([Passage("z1", "zoo", TEXTS[4]), Passage("z2", "uniform", TEXTS[3])], "other")
    ra = Counting(get_retriever("bm25", corpus, progress=False))
    rb = Counting(get_retriever("bm25", other, progress=False))
    pools = {"q1": Searched(corpus, ra), "q2": Searched(corpus, ra), "q3": Searched(other, rb)}
    entries = run([*QUESTIONS, Question("q4", "nothing here", ["a", "b"])], "none", 2, lambda q: pools.get(q.id))
    assert [e["id"] for e in entries] == ["q1", "q2", "q3", "q4"]
    assert len(ra.calls) == 1 and len(ra.calls[0]) == 2 and len(rb.calls) == 1  # consecutive questions: one group
    assert entries[2]["ctxs"][0]["id"] == "z1" and entries[3]["ctxs"] == []  # q3 in its own pool; q4: nothing
    assert {c["id"] for c in entries[2]["ctxs"]} <= {"z1", "z2"} and entries[0]["ctxs"][0]["id"].startswith("p")


class Overlap(Judge):
    """A deterministic judge: the share of the perspective's words found in the passage."""

    backend = "overlap"

    def _name_stem(self):
        return "overlap"

    def _score(self, pairs):
        return np.array([len(set(s.lower().split()) & set(p.lower().split())) / max(1, len(s.split()))
                         for p, s in pairs])


def test_the_cli_and_the_playground_column_rank_and_score_alike(corpus, tmp_path):
    """``berds retrieve --mmr`` writes, for each question, the passages the Playground's MMR column shows, and the
    run judged and scored (``experiment.score``) gives each question the column's MRecall and Precision."""
    from berds_core.cli import main
    from berds_core.experiment import score
    from berds_core.judges import judge_run
    from berds_core.studio.columns import Engine, column_pipeline, column_result

    cpath, qpath, out = tmp_path / "corpus.jsonl", tmp_path / "q.jsonl", tmp_path / "run.jsonl"
    cpath.write_text("".join(json.dumps({"id": f"p{i}", "title": f"t{i}", "text": t}) + "\n"
                             for i, t in enumerate(TEXTS)))
    qpath.write_text("".join(json.dumps({"id": q.id, "question": q.question, "perspectives": q.perspectives}) + "\n"
                             for q in QUESTIONS))
    assert main(["retrieve", "--questions", str(qpath), "--corpus", str(cpath), "--retriever", "bm25", "--k", "3",
                 "--mmr", "0.5", "--out", str(out), "--quiet"]) in (0, None)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    judge = Overlap(0.3)
    report = score(judge_run(written, judge, progress=False), judge=judge.name, ks=(3,))
    engine = Engine(corpus, get_retriever("bm25", corpus, progress=False), judge)
    for i, (q, line) in enumerate(zip(QUESTIONS, written)):
        col = column_result(engine, q, column_pipeline("mmr", 0.5), 3)
        assert [p["id"] for p in col["passages"]] == [c["id"] for c in line["ctxs"]]
        assert col["mrecall"] == report.per_question["mrecall@3"][i]
        assert col["precision"] == report.per_question["precision@3"][i]
    assert report.mean("precision@3") > 0  # the judge says something: the figures compared are not all zero


def test_a_page_engine_runs_on_the_pipelines_own_retriever_and_keeps_what_the_page_gives(corpus):
    """``question_engine``: the sidebar's retriever unless the pipeline names one (the preset's dense); a judge or
    embedder the page passes, None included (an embedder that failed to load), is kept as given."""
    from studio_ui.config import Config
    from studio_ui.engines import question_engine

    plain = question_engine(Config(retriever="bm25"), corpus, "none", judge=None, embedder=None)
    assert plain.judge is None and plain.embedder is None and plain.corpus is corpus
    assert plain.retriever.name.startswith("bm25")
    preset = question_engine(Config(retriever="bm25"), corpus, "preset", judge=None, embedder=None)
    assert preset.retriever.name.startswith("dense") and preset.embedder is None
