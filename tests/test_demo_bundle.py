"""The built-in demo behaves like a small real corpus (docs/demo.md): each question's own pool of 40 passages,
the shape the rule fixes (majority side, ratio, background, distractors), gold labels inside the pools; the
pools reach the CLI (`berds import demo`, `--corpus-per-question`) and the pages; a question the corpus does
not cover finds nothing covered; Discover tags the demo pool's own claims as they were written."""
import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from berds_core.datasets import load_demo
from berds_core.datasets.demo import demo_dir, demo_pool_path

RESERVED = re.compile(r"\b(cars?|traffic|motorists?|zoos?|plastic bags?|compulsory voting|voting age)\b", re.I)


def rule_counts(i: int, stances: list) -> dict[int, int]:
    """docs/demo.md's rule, computed from a question's number and stances: supporting passages per perspective."""
    majority = "support" if i % 2 == 0 else "oppose"
    ratio = (3, 2, 5)[i % 3]
    neutral = [j for j, s in enumerate(stances) if s is None]
    rest = 24 - 3 * len(neutral)
    big = round(rest * ratio / (ratio + 1))
    out = {j: 3 for j in neutral}
    for side, n in ((majority, big), ("oppose" if majority == "support" else "support", rest - big)):
        idx = [j for j, s in enumerate(stances) if s == side]
        for t, j in enumerate(idx):
            out[j] = n // len(idx) + (1 if t < n % len(idx) else 0)
    return out


@pytest.fixture(scope="module")
def bundle():
    return load_demo()


def _kinds() -> dict[str, str]:
    return {o["id"]: o["kind"] for f in sorted(demo_dir().glob("corpus_*.jsonl"))
            for o in map(json.loads, f.read_text(encoding="utf-8").splitlines())}


def test_each_question_has_its_own_pool_of_40(bundle):
    assert len(bundle.questions) == 14 and len(bundle.passages) == 560
    assert set(bundle.pools) == {q.id for q in bundle.questions}
    owner = Counter(pid for ids in bundle.pools.values() for pid in ids)
    assert all(n == 1 for n in owner.values()) and len(owner) == 560  # every passage in exactly one pool
    assert all(len(ids) == 40 for ids in bundle.pools.values())
    for qid, labels in bundle.gold.items():
        assert set(labels) <= set(bundle.pools[qid])


def test_the_pools_follow_the_rule_written_before_them(bundle):
    kinds = _kinds()
    for i, q in enumerate(bundle.questions):
        gold = bundle.gold[q.id]
        per = Counter(j for pid in bundle.pools[q.id] for j in gold.get(pid, ()))
        assert dict(per) == rule_counts(i, q.stances), q.id
        k = Counter(kinds[pid] for pid in bundle.pools[q.id])
        assert k == {"argument": 22, "background": 9, "distractor": 9}, q.id
        for pid in bundle.pools[q.id]:  # a background passage or distractor supports nothing; an argument does
            assert bool(gold.get(pid)) == (kinds[pid] == "argument"), pid
        both = [pid for pid in bundle.pools[q.id] if len(gold.get(pid, ())) > 1]
        assert len(both) == 2 and all({q.stances[j] for j in gold[pid]} == {"support", "oppose"} for pid in both)
        maj = "support" if i % 2 == 0 else "oppose"
        side = Counter(q.stances[j] for pid in bundle.pools[q.id] for j in gold.get(pid, ()))
        assert side[maj] > side["oppose" if maj == "support" else "support"], q.id  # one side outnumbers the other


def test_passages_look_like_berds_passages_and_leave_reserved_topics_alone(bundle):
    for p in bundle.passages:
        assert 75 <= len(p.text.split()) <= 100 and p.title.strip(), p.id  # --passage-words 100 never splits one
        assert not RESERVED.search(p.title + " " + p.text), p.id
    # ids say nothing about a passage's role: each pool's kinds are shuffled over its numbers
    kinds = _kinds()
    first = [kinds[ids[0]] for ids in bundle.pools.values()]
    assert len(set(first)) > 1


def test_import_demo_writes_the_pools_for_corpus_per_question(tmp_path):
    def berds(*argv):
        out = subprocess.run([sys.executable, "-m", "berds_core", *map(str, argv)], capture_output=True, text=True,
                             cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    res = berds("import", "demo", "--out", "demo", "--json")
    assert res["corpus_per_question"] == "demo/corpora"
    lines = [json.loads(x) for x in (tmp_path / "demo" / "corpus.jsonl").read_text().splitlines()]
    assert len(lines) == 560 and all("question_id" in x for x in lines)
    assert len((tmp_path / "demo" / "corpora" / "a-q01" / "passages.jsonl").read_text().splitlines()) == 40
    run = berds("retrieve", "--questions", "demo/questions.jsonl", "--corpus-per-question", "demo/corpora",
                "--retriever", "bm25", "--k", 10, "--out", "run.jsonl", "--quiet", "--json")
    assert run["corpus_size"] == {"min": 40, "max": 40}  # no passage split, none from another question
    for line in (tmp_path / "run.jsonl").read_text().splitlines():
        e = json.loads(line)
        assert all(c["id"].startswith(e["id"] + "-p") for c in e["ctxs"])
    ev = berds("evaluate", "--run", "run.jsonl", "--gold", "demo/gold.jsonl", "--k", 5, "--json")
    assert 0 < ev["mrecall"] < 1 and ev["precision"] > 0.3  # a real corpus: some questions are not covered


def test_page_data_ranks_a_demo_question_in_its_pool_and_a_typed_one_in_the_union():
    from berds_core.studio.data import DEMO, FROM_DATASET, load_data

    cfg = type("Cfg", (), dict(dataset=DEMO, dataset_path="", dataset_format="auto", gold_path="",
                               corpus=FROM_DATASET, corpus_path="", retriever="bm25"))()
    data = load_data(cfg)
    assert len(data.corpus) == 560 and len(data.pools) == 14
    assert len(data.corpus_for("a-q01")) == 40 and data.corpus_for("typed") is data.corpus


@pytest.mark.slow
def test_a_question_the_demo_does_not_cover_gets_nothing_covered():
    """Typed against the demo corpus (no passage is about cars), the embedded judge covers no perspective in any
    column, and no banner may say every perspective is covered."""
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.judges import get_judge
    from berds_core.records import Question
    from berds_core.retrieval import get_retriever
    from berds_core.studio.columns import Engine, column_pipeline, column_result

    b = load_demo()
    corpus = corpus_from_passages(b.passages, "demo")
    q = Question("typed", "Should cities ban cars from their centres?",
                 ["Car-free centres cut air pollution and make streets safer.",
                  "Banning cars hurts shops and people who depend on driving.",
                  "City centres without cars attract more pedestrians and shoppers.",
                  "Disabled and elderly people need cars to reach the centre."])
    judge = get_judge("embedded")
    for kind in ("bm25", "dense"):
        engine = Engine(corpus, get_retriever(kind, corpus, progress=False), judge, None)
        for method in ("none", "mmr", "qe", "rerank"):
            res = column_result(engine, q, column_pipeline(method, None, "offline"), 5)
            assert not any(res["covered"]), (kind, method, res["covered"])
            assert res["mrecall"] == 0


def test_discover_tags_the_demo_pools_own_claims_as_written():
    """Every stance tag Discover gives for a claim of the demo pool, on a sentence written for that claim, is
    the stance written in the pool (the whole pool: every claim it holds)."""
    from berds_core.discovery import Discoverer, claim_of, open_pool

    rows = [json.loads(x) for x in demo_pool_path().read_text(encoding="utf-8").splitlines()]
    assert all(r["stance"] in ("support", "undermine") for r in rows)
    by_id = {r["id"]: r for r in rows}
    disc = Discoverer(open_pool(demo_pool_path()))
    checked = 0
    for topic in sorted({r["topic"] for r in rows}):
        found = disc.discover(claim_of(topic), max_k=None)
        assert found, topic
        for e in found:
            r = by_id.get(e["pid"])
            if r is not None and r["topic"] == topic:
                assert e["stance"] == r["stance"] and e["stance_from"] == "written", (topic, e["text"])
                checked += 1
        labels = disc.label(claim_of(topic), [r["id"] for r in rows if r["topic"] == topic])
        assert all(x["stance"] == by_id[x["pid"]]["stance"] for x in labels), topic
    assert checked >= 40
    # the inversions, now as written
    cars = {e["text"]: e["stance"] for e in disc.discover(claim_of("Should cities ban cars from their centres?"),
                                                          max_k=None)}
    assert cars.get("Shops in car-free centres lose customers who live outside the city and drive in.",
                    "undermine") == "undermine"


def test_a_column_says_unsure_under_either_policy_and_counts_by_the_policy():
    """On the demo's questions (each in its own pool, the embedded judge): a pair inside the judge's unsure band
    is drawn unsure (verdict 0) under both label policies; ``confident`` never counts it, ``threshold`` counts
    it by the threshold's decision; a perspective is flagged unsure when no pair the judge is sure of
    supports it in the top k and an unsure pair is there, so under ``threshold`` one covered only by unsure
    pairs is still flagged (the page says so beside its coverage banner)."""
    import numpy as np

    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever
    from berds_core.studio.columns import Engine, column_pipeline, column_result
    from berds_core.studio.data import DEMO, FROM_DATASET, load_data

    cfg = type("Cfg", (), dict(dataset=DEMO, dataset_path="", dataset_format="auto", gold_path="",
                               corpus=FROM_DATASET, corpus_path="", retriever="bm25"))()
    data = load_data(cfg)
    judge = get_judge("embedded")
    k, thin = 5, 0
    for q in data.questions[:6]:
        corpus = data.corpus_for(q.id)
        engine = Engine(corpus, get_retriever("bm25", corpus, progress=False), judge, None)
        res = {p: column_result(engine, q, column_pipeline("none", None, "offline"), k, policy=p)
               for p in ("threshold", "confident")}
        a, b = res["threshold"], res["confident"]
        assert [p["id"] for p in a["passages"]] == [p["id"] for p in b["passages"]]
        for pa, pb in zip(a["passages"], b["passages"]):
            assert pa["verdicts"] == pb["verdicts"] and pa["counted"] == pa["labels"]  # threshold: its decision
            assert pb["counted"] == [v == 1 for v in pb["verdicts"]]  # confident: sure pairs only
        V = np.array([p["verdicts"] for p in a["passages"][:k]])
        C = np.array([p["counted"] for p in a["passages"][:k]])
        sure = (C & (V == 1)).any(axis=0)
        assert a["unsure"] == (~sure & (V == 0).any(axis=0)).tolist() == b["unsure"]
        assert a["covered"] == C.any(axis=0).tolist() and a["mrecall"] >= b["mrecall"]
        thin += int((C.any(axis=0) & ~sure & (V == 0).any(axis=0)).sum())
    assert thin > 0  # the demo has perspectives covered only by unsure pairs: the case is exercised
