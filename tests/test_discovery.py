"""Perspective discovery (berds_core.discovery): pools, fusion, PERSPECTRUM metrics, the pipeline, the CLI.

Pools and claims are tiny files written here; nothing reads ../shared.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from berds_core.discovery.claims import load_claims, load_gold
from berds_core.discovery.evaluate import (GoldClaim, evaluate_predictions, representatives, t1_claim, t2_scores,
                                           t3_scores, same_cluster_pairs)
from berds_core.discovery.fusion import rrf_fuse
from berds_core.discovery.heads import LinearHead, cluster_labels, fit_head, pair_features
from berds_core.discovery.pipeline import Cluster, Knobs, balanced_order, kept, select
from berds_core.discovery.pool import load_pool
from berds_core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

UNIFORMS = [  # pId 1..8: school uniforms (both sides, two paraphrase pairs)
    "School uniforms reduce bullying because every student looks the same.",
    "Uniforms cut bullying since students dress alike.",
    "Uniforms save parents money on expensive clothes.",
    "School uniforms restrict students' freedom of expression.",
    "Uniforms stop children from expressing their individuality.",
    "Uniforms are costly for poor families who must buy them.",
    "Wearing a uniform improves discipline and focus in class.",
    "There is no evidence that uniforms improve academic results.",
]
SPACE = [  # pId 9..16: unrelated
    "Space exploration inspires young scientists.",
    "Mars missions cost billions that could feed the hungry.",
    "The moon landing was a triumph of engineering.",
    "Private rocket companies lower launch costs.",
    "Asteroid mining could supply rare metals.",
    "Telescopes in orbit see farther than ground observatories.",
    "Astronauts suffer bone loss in microgravity.",
    "Satellites track climate change from orbit.",
]


def write_pool(folder: Path) -> Path:
    path = folder / "pool.json"
    path.write_text(json.dumps([{"pId": i + 1, "text": t, "source": "test"} for i, t in enumerate(UNIFORMS + SPACE)]))
    return path


def write_claims(folder: Path) -> Path:
    """A PERSPECTRUM-format claims file with gold clusters (pids as in write_pool) and a split file."""
    claims = [{"cId": 7, "text": "Students should wear school uniforms", "source": "test", "perspectives": [
        {"pids": [1, 2], "stance_label_3": "SUPPORT"}, {"pids": [3], "stance_label_3": "SUPPORT"},
        {"pids": [7], "stance_label_3": "SUPPORT"}, {"pids": [4, 5], "stance_label_3": "UNDERMINE"},
        {"pids": [6], "stance_label_3": "UNDERMINE"}, {"pids": [8], "stance_label_3": "UNDERMINE"}]},
        {"cId": 8, "text": "Governments should fund space exploration", "source": "test", "perspectives": [
            {"pids": [9], "stance_label_3": "SUPPORT"}, {"pids": [10], "stance_label_3": "UNDERMINE"}]}]
    path = folder / "claims.json"
    path.write_text(json.dumps(claims))
    (folder / "dataset_split_v1.0.json").write_text(json.dumps({"7": "dev", "8": "train"}))
    return path


# --------------------------------------------------------------------------- fusion

def test_rrf_scores_and_order():
    fused = rrf_fuse([["a", "b", "c"], ["c", "a", "d"]], k=60)
    got = dict(fused)
    assert got["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert got["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert got["d"] == pytest.approx(1 / 63)
    assert [x for x, _ in fused] == ["a", "c", "b", "d"]
    # a tie (b and d both once at rank 2 / 3) is broken by the better rank
    assert [x for x, _ in rrf_fuse([["x", "b"], ["y", "z", "d"]])][:2] == ["x", "y"]
    assert rrf_fuse([]) == []
    with pytest.raises(ValueError):
        rrf_fuse([["a"]], k=-1)


@pytest.mark.slow
def test_rrf_matches_ranx():
    from ranx import Run, fuse

    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(30)]
    lists = [list(rng.permutation(docs)[:12]), list(rng.permutation(docs)[:15])]
    runs = [Run({"q": {d: float(len(lst) - i) for i, d in enumerate(lst)}}) for lst in lists]
    theirs = fuse(runs, method="rrf", params={"k": 60}).to_dict()["q"]
    ours = dict(rrf_fuse(lists, k=60))
    assert set(ours) == set(theirs)
    for d in ours:
        assert ours[d] == pytest.approx(theirs[d], rel=1e-6)


# --------------------------------------------------------------------------- pools and claims

def test_load_pool_formats(tmp_path):
    pool = load_pool(write_pool(tmp_path))
    assert len(pool) == 16 and pool.ids[:2] == ["1", "2"] and pool.texts[0] == UNIFORMS[0]
    (tmp_path / "p.jsonl").write_text('{"id": "a", "text": "one"}\n\n{"pId": 5, "text": "two"}\n{"text": "three"}\n')
    p = load_pool(tmp_path / "p.jsonl")
    assert p.ids == ["a", "5", "p-4"] and p.texts == ["one", "two", "three"]
    (tmp_path / "p.tsv").write_text("id\ttext\nx\tfirst sentence\ny\tsecond sentence\n")
    assert load_pool(tmp_path / "p.tsv").ids == ["x", "y"]
    (tmp_path / "p.txt").write_text("alpha beta\n\ngamma delta\n")
    t = load_pool(tmp_path / "p.txt")
    assert t.ids == ["1", "3"] and t.texts == ["alpha beta", "gamma delta"]
    # a long sentence is never split into passages
    (tmp_path / "long.txt").write_text(" ".join(["word"] * 150) + "\n")
    assert len(load_pool(tmp_path / "long.txt")) == 1


def test_load_pool_errors_name_file_place_and_field(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps([{"pId": 1, "text": "ok"}, {"pId": 2}]))
    with pytest.raises(InputError) as e:
        load_pool(tmp_path / "bad.json")
    assert str(e.value) == f"{tmp_path / 'bad.json'}:entry 1: field 'text': missing"
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "text": "a"}\n{"id": [1], "text": "b"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'id'"):
        load_pool(tmp_path / "bad.jsonl")
    (tmp_path / "dup.jsonl").write_text('{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n')
    with pytest.raises(InputError, match="duplicate passage id '1'"):
        load_pool(tmp_path / "dup.jsonl")
    (tmp_path / "x.docx").write_text("x")
    with pytest.raises(InputError, match="unknown pool format"):
        load_pool(tmp_path / "x.docx")
    with pytest.raises(InputError, match="file not found"):
        load_pool(tmp_path / "missing.json")


def test_load_claims_and_gold(tmp_path):
    path = write_claims(tmp_path)
    claims = load_claims(path)
    assert [c.id for c in claims] == ["7", "8"] and claims[0].gold.clusters[0] == ["1", "2"]
    assert claims[0].gold.stances == ["support"] * 3 + ["undermine"] * 3
    assert [c.id for c in load_claims(path, split="dev")] == ["7"]
    gold = load_gold(path, split="train")
    assert list(gold) == ["8"] and gold["8"].cluster_of == {"9": 0, "10": 1}
    (tmp_path / "c.jsonl").write_text('{"id": "q1", "question": "Is X good?"}\n{"claim": "Y is bad"}\n')
    assert [(c.id, c.text) for c in load_claims(tmp_path / "c.jsonl")] == [("q1", "Is X good?"), ("2", "Y is bad")]
    (tmp_path / "c.txt").write_text("First claim\n\nSecond claim\n")
    assert [c.id for c in load_claims(tmp_path / "c.txt")] == ["1", "3"]
    (tmp_path / "bad.jsonl").write_text('{"id": "q1"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: field 'claim': missing"):
        load_claims(tmp_path / "bad.jsonl")
    with pytest.raises(InputError, match="needs PERSPECTRUM clusters"):
        load_gold(tmp_path / "c.jsonl")
    bad = json.loads(path.read_text())
    bad[0]["perspectives"][0]["stance_label_3"] = "MAYBE"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"entry 0: field 'perspectives\[0\].stance_label_3'"):
        load_claims(tmp_path / "bad.json")


# --------------------------------------------------------------------------- PERSPECTRUM metrics

GOLD = GoldClaim("c", "claim", [["1", "2"], ["3"], ["4"]], ["support", "undermine", "support"])


def test_t1_counts_a_gold_cluster_once():
    # 1 and 2 are one gold cluster: the second is a false positive; 9 is wrong; 3 right
    p, r, f = t1_claim(["1", "2", "9", "3"], GOLD)
    assert (p, r) == (pytest.approx(2 / 4), pytest.approx(2 / 3))
    assert f == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert t1_claim([], GOLD) == (0.0, 0.0, 0.0)
    assert t1_claim(["1", "3", "4"], GOLD) == (1.0, 1.0, 1.0)
    # entries sharing a predicted cluster are one predicted perspective (its first entry)
    assert representatives([{"pid": "1", "cluster": 0}, {"pid": "2", "cluster": 0}, {"pid": "3", "cluster": 1},
                            {"pid": "9"}]) == ["1", "3", "9"]


def test_t2_accuracy_and_per_class_f1():
    s = t2_scores(["support", "support", "undermine", "undermine"], ["support", "undermine", "undermine", None])
    assert s["accuracy"] == 0.5 and s["pairs"] == 4
    assert s["support"]["precision"] == 1.0 and s["support"]["recall"] == 0.5
    assert s["undermine"]["precision"] == 0.5 and s["undermine"]["recall"] == 0.5


def test_t3_pairwise_precision_recall():
    gold_pairs = same_cluster_pairs({"1": 0, "2": 0, "3": 1, "4": 1}, ["1", "2", "3", "4"])
    assert gold_pairs == {("1", "2"), ("3", "4")}
    pred_pairs = same_cluster_pairs({"1": "a", "2": "a", "3": "a", "4": "b"}, ["1", "2", "3", "4"])
    s = t3_scores([(gold_pairs, pred_pairs, 6)])
    assert s["precision"] == pytest.approx(1 / 3) and s["recall"] == pytest.approx(1 / 2)
    assert s["f1"] == pytest.approx(0.4)


def test_evaluate_predictions_overall_is_t1_f1_times_t2_accuracy():
    preds = {"c": {"perspectives": [{"pid": "1", "cluster": 0}, {"pid": "3", "cluster": 1}, {"pid": "9", "cluster": 2}],
                   "on_gold": [{"pid": "1", "stance": "support", "cluster": 0},
                               {"pid": "2", "stance": "support", "cluster": 0},
                               {"pid": "3", "stance": "support", "cluster": 1},
                               {"pid": "4", "stance": "support", "cluster": 2}]}}
    res = evaluate_predictions(preds, {"c": GOLD})
    assert res["t1"]["precision"] == pytest.approx(2 / 3) and res["t1"]["recall"] == pytest.approx(2 / 3)
    assert res["t2"]["accuracy"] == pytest.approx(3 / 4)
    assert res["t3"]["precision"] == 1.0 and res["t3"]["recall"] == 1.0
    assert res["overall"] == pytest.approx(res["t1"]["f1"] * 0.75)
    # no on_gold labels: T2 / T3 are missing, not zero
    res = evaluate_predictions({"c": {"perspectives": preds["c"]["perspectives"]}}, {"c": GOLD})
    assert res["t2"] is None and res["overall"] is None and res["t1"]["f1"] > 0


# --------------------------------------------------------------------------- heads and selection

def test_linear_head_round_trip_and_constant_features():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=200), np.ones(200)])  # second feature constant
    y = (X[:, 0] > 0).astype(int)
    head = fit_head(X, y, 1.0)
    p = head.proba(X)
    assert np.isfinite(p).all() and ((p >= 0.5) == y).mean() > 0.95
    again = LinearHead.from_arrays(head.to_arrays("h"), "h")
    assert np.allclose(again.proba(X), p)


def test_pair_features_shape_and_lexical_overlap():
    E = np.eye(4)[:2]
    X = pair_features(E, E[::-1], ["school uniforms cut bullying", "rockets"], ["uniforms cut bullying", "rockets"])
    assert X.shape == (2, 4 + 8)
    assert X[0, 1] > 0.5 and X[1, 1] == 1.0  # stem Jaccard
    assert X[0, 0] == 0.0  # cosine of orthogonal vectors


def test_cluster_labels_complete_and_average():
    P = np.array([[1, .9, .2, .1], [.9, 1, .6, .1], [.2, .6, 1, .1], [.1, .1, .1, 1.]])
    assert cluster_labels(P, 0.5, "complete").tolist() == [0, 0, 1, 2]
    assert cluster_labels(P, 0.95, "complete").tolist() == [0, 1, 2, 3]
    assert cluster_labels(P, 0.35, "average").tolist() == [0, 0, 0, 1]
    assert cluster_labels(np.eye(1), 0.5).tolist() == [0] and cluster_labels(np.zeros((0, 0)), 0.5).tolist() == []


def test_balanced_order_alternates_sides_and_cuts():
    cl = [Cluster(i, [i], s, 0.0, st) for i, (s, st) in enumerate(
        [(0.9, "support"), (0.8, "support"), (0.7, "support"), (0.6, "undermine"), (0.5, "undermine")])]
    order = balanced_order(cl, None)
    assert [c.stance for c in order] == ["support", "undermine", "support", "undermine", "support"]
    assert [c.rep for c in order] == [0, 3, 1, 4, 2]
    assert [c.rep for c in balanced_order(cl, 3)] == [0, 3, 1]
    assert balanced_order([], 3) == []


def test_select_merges_equivalents_and_keeps_at_least_min_k():
    rel = np.array([0.9, 0.85, 0.6, 0.2])
    sup = np.array([0.9, 0.8, 0.1, 0.5])
    same = np.array([[1, .95, .1, .1], [.95, 1, .1, .1], [.1, .1, 1, .1], [.1, .1, .1, 1.]])
    knobs = Knobs(threshold=0.5, min_k=1, max_k=None, dedupe_threshold=0.5)
    keep = kept(rel, knobs)
    assert keep.tolist() == [0, 1, 2]
    out = select(rel[keep], sup[keep], same[np.ix_(keep, keep)], knobs)
    assert [(c.rep, c.members, c.stance) for c in out] == [(0, [0, 1], "support"), (2, [2], "undermine")]
    assert kept(np.array([0.1, 0.3]), Knobs(threshold=0.5, min_k=1)).tolist() == [1]
    assert kept(np.array([0.1, 0.3]), Knobs(threshold=0.5, min_k=0)).tolist() == []  # the faces: nothing off topic
    assert kept(np.array([0.9, 0.8, 0.7]), Knobs(threshold=0.0, max_kept=2)).tolist() == [0, 1]


# --------------------------------------------------------------------------- an LLM through a real local server

class _RuleLLM(BaseHTTPRequestHandler):
    """An OpenAI-style server answering the discovery prompts by rules (first-token logprobs)."""

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        self.server.prompts.append(text)
        low = text.lower()
        if "same point" in low:
            yes = "bullying" in low.split("perspective b:")[0] and "bullying" in low.split("perspective b:")[1]
        elif "support the claim" in low:
            stmt = low.split("perspective:")[1].split("\n")[0]
            yes = not any(w in stmt for w in ("restrict", "stop", "costly", "no evidence"))
        else:
            yes = "uniform" in low.split("statement:")[1]
        p = 0.9 if yes else 0.1
        choice = {"index": 0, "message": {"role": "assistant", "content": "Yes" if yes else "No"},
                  "logprobs": {"content": [{"token": "Yes" if yes else "No", "logprob": math.log(max(p, 1 - p)),
                                            "top_logprobs": [{"token": "Yes", "logprob": math.log(p)},
                                                             {"token": "No", "logprob": math.log(1 - p)}]}]}}
        data = json.dumps({"choices": [choice]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def rule_llm():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _RuleLLM)
    srv.prompts = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv, f"openai:rules@http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


@pytest.mark.slow
def test_llm_discovery_relevance_stance_and_merging(tmp_path, rule_llm):
    from berds_core.discovery import Discoverer, Knobs, open_pool

    srv, spec = rule_llm
    index = open_pool(write_pool(tmp_path))
    disc = Discoverer(index, "llm", llm=spec, knobs=Knobs(depth=16, max_k=None, min_k=1))
    found = disc.discover("Students should wear school uniforms")
    pids = [p["pid"] for p in found]
    assert set(pids) <= {str(i) for i in range(1, 9)}  # nothing about space
    assert sorted(pids + [m for p in found for m in p["members"]]) == sorted(str(i) for i in range(1, 9))
    # the two bullying sentences are one perspective
    bully = [p for p in found if p["pid"] in ("1", "2")]
    assert len(bully) == 1 and set(bully[0]["members"]) == ({"1", "2"} - {bully[0]["pid"]})
    stance = {p["pid"]: p["stance"] for p in found}
    assert stance.get("4", stance.get("5")) == "undermine" and stance.get("3") == "support"
    # sides alternate, starting with the most relevant one's
    sides = [p["stance"] for p in found]
    assert all(a != b for a, b in zip(sides, sides[1:4]))
    assert [p["cluster"] for p in found] == list(range(len(found)))
    lab = disc.label("Students should wear school uniforms", ["4", "5", "3", "999"])
    assert [x["pid"] for x in lab] == ["4", "5", "3"]  # unknown pids skipped
    assert [x["stance"] for x in lab] == ["undermine", "undermine", "support"]
    assert srv.prompts and all("Claim:" in p or "Perspective A:" in p for p in srv.prompts)


# --------------------------------------------------------------------------- stance from the studio's model

class StubStance:
    """The stance model's discovery interface: on-topic for uniform sentences, support by a word list."""

    name = "stance-stub"

    def __init__(self, threshold=0.4):
        self._thr = threshold
        self.calls = []

    def rule(self, use):
        return {"threshold": self._thr} if use == "discovery" else {}

    def threshold(self, use, default=0.5):
        return self._thr if use == "discovery" else default

    def on_topic(self, target, texts, use="discovery"):
        self.calls.append(("on_topic", len(texts)))
        return np.array([0.9 if ("niform" in t) else 0.05 for t in texts])

    def claim_stance(self, claim, texts):
        self.calls.append(("claim_stance", len(texts)))
        bad = ("restrict", "stop", "costly", "no evidence")
        return np.array([0.1 if any(b in t for b in bad) else 0.8 for t in texts])


def _heads_file(tmp_path, relevance):
    """A heads file: a relevance head that ranks by cosine, an equivalence head that never merges."""
    from berds_core.discovery.heads import REL_FEATURES

    d = len(REL_FEATURES)
    rel = LinearHead(np.zeros(d), np.ones(d), np.r_[5.0, np.zeros(d - 1)], 0.0)
    equiv = LinearHead(np.zeros(4 + 2 * 384), np.ones(4 + 2 * 384), np.zeros(4 + 2 * 384), -20.0)
    stack = LinearHead(np.zeros(1 + d), np.ones(1 + d), np.r_[1.0, np.zeros(d)], 0.0)
    knobs = dict(Knobs().__dict__, threshold=0.5, max_k=None, stance_threshold=0.5)
    path = tmp_path / "heads.npz"
    np.savez(path, **rel.to_arrays("rel"), **equiv.to_arrays("equiv"), **stack.to_arrays("stack"),
             choice=np.array(json.dumps({"relevance": relevance, "top_m": 30})), knobs=np.array(json.dumps(knobs)),
             report=np.array("{}"))
    return path


@pytest.mark.parametrize("relevance", ["stance", "stack"])
def test_offline_discovery_reads_stance_from_the_stance_model(tmp_path, monkeypatch, relevance):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    from berds_core.discovery import Discoverer, open_pool

    index = open_pool(write_pool(tmp_path))
    stub = StubStance(threshold=0.4)
    disc = Discoverer(index, "offline", weights=_heads_file(tmp_path, relevance), stance_model=stub)
    assert disc.knobs.stance_threshold == 0.4  # the stance model's cross-validated threshold, not the file's
    found = disc.discover("Students should wear school uniforms")
    assert found and all(int(p["pid"]) <= 8 for p in found)  # relevance came from the stance model's on-topic
    assert {p["stance"] for p in found} == {"support", "undermine"}
    for p in found:
        bad = any(b in p["text"] for b in ("restrict", "stop", "costly", "no evidence"))
        assert p["stance"] == ("undermine" if bad else "support")
    assert any(c[0] == "on_topic" for c in stub.calls)
    lab = disc.label("Students should wear school uniforms", ["4", "1"])
    assert [x["stance"] for x in lab] == ["undermine", "support"] and lab[0]["support_prob"] == 0.1


def test_offline_relevance_rejects_an_unknown_scorer(tmp_path):
    from berds_core.discovery.pipeline import OfflineModels

    with pytest.raises(ValueError, match="relevance scorer must be one of heads, stance, stack"):
        OfflineModels(_heads_file(tmp_path, "ce"), stance_model=StubStance())


# --------------------------------------------------------------------------- the shipped offline models

@pytest.mark.slow
def test_offline_discovery_on_a_tiny_pool(tmp_path):
    from berds_core.discovery import discover, open_pool

    pool = write_pool(tmp_path)
    found = discover("Students should wear school uniforms", pool, max_k=None)
    assert found, "nothing discovered"
    pids = [int(p["pid"]) for p in found]
    assert pids[0] <= 8 and sum(p <= 8 for p in pids) >= len(pids) / 2
    assert all(p["stance"] in ("support", "undermine") for p in found)
    assert len(set(pids)) == len(pids) and [p["cluster"] for p in found] == list(range(len(found)))
    again = discover("Students should wear school uniforms", open_pool(pool), max_k=2)
    assert len(again) <= 2


# --------------------------------------------------------------------------- CLI

def berds(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "berds_core", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT)


def test_discover_eval_cli_scores_a_prediction_file(tmp_path):
    claims = write_claims(tmp_path)
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": "7", "claim": "x", "perspectives": [
        {"pid": "1", "text": "t", "stance": "support", "cluster": 0},
        {"pid": "4", "text": "t", "stance": "undermine", "cluster": 1}],
        "on_gold": [{"pid": p, "stance": "support", "cluster": i} for i, p in enumerate("1234567")] +
                   [{"pid": "8", "stance": "undermine", "cluster": 8}]}) + "\n")
    r = berds("discover-eval", "--pred", pred, "--gold", claims, "--split", "dev", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["claims"] == 1 and res["t1"]["precision"] == 1.0 and res["t1"]["recall"] == pytest.approx(2 / 6)
    assert res["t2"]["accuracy"] == pytest.approx(5 / 8)  # the 4 support pairs right, 1 of the 4 undermine ("8")
    assert res["overall"] == pytest.approx(res["t1"]["f1"] * res["t2"]["accuracy"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "7", "perspectives": [{"pid": "1", "stance": "maybe"}]}\n')
    r = berds("discover-eval", "--pred", bad, "--gold", claims)
    assert r.returncode == 2 and "bad.jsonl:1: field 'perspectives[0].stance'" in r.stderr
    assert r.stderr.count("\n") == 1
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"id": "99", "perspectives": []}\n')
    r = berds("discover-eval", "--pred", unknown, "--gold", claims)
    assert r.returncode == 2 and "claim '99' is not in" in r.stderr


def test_discover_cli_bad_input_exits_2(tmp_path):
    claims, pool = write_claims(tmp_path), write_pool(tmp_path)
    r = berds("discover", "--claims", claims, "--pool", pool, "--method", "llm", "--out", tmp_path / "o.jsonl")
    assert r.returncode == 2 and "--llm" in r.stderr and "needs an LLM" in r.stderr
    r = berds("discover", "--claims", tmp_path / "nope.json", "--pool", pool, "--out", tmp_path / "o.jsonl")
    assert r.returncode == 2 and "nope.json: file not found" in r.stderr
    r = berds("discover", "--claims", claims, "--pool", pool, "--min-k", "-1", "--out", tmp_path / "o.jsonl")
    assert r.returncode == 2 and "--min-k: must be 0 or more" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_discover_cli_offline_writes_lines_and_gold_labels(tmp_path):
    claims, pool = write_claims(tmp_path), write_pool(tmp_path)
    out = tmp_path / "out.jsonl"
    r = berds("discover", "--claims", claims, "--pool", pool, "--split", "dev", "--out", out, "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["claims"] == 1 and info["pool_sentences"] == 16
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["7"] and lines[0]["claim"] == "Students should wear school uniforms"
    for p in lines[0]["perspectives"]:
        assert set(p) >= {"pid", "text", "stance", "cluster"} and p["stance"] in ("support", "undermine")
    assert sorted(x["pid"] for x in lines[0]["on_gold"]) == sorted(str(i) for i in range(1, 9))
    r = berds("discover-eval", "--pred", out, "--gold", claims, "--split", "dev", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["labelled_claims"] == 1


# --------------------------------------------------------------------------- the QE source

def test_qe_pool_source_needs_a_pool(tmp_path):
    from berds_core.diversify import QE_SOURCES, perspectives_for
    from berds_core.records import Question

    assert "pool" in QE_SOURCES
    with pytest.raises(ValueError, match="needs a perspective pool"):
        perspectives_for(Question("q", "Should students wear uniforms?", ["a"]), "pool")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "text": t}) + "\n" for i, t in enumerate(UNIFORMS)))
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "q1", "question": "Should students wear uniforms?", "perspectives": ["a", "b"]}) + "\n")
    r = berds("retrieve", "--questions", qs, "--corpus", corpus, "--qe", "pool", "--out", tmp_path / "run.jsonl")
    assert r.returncode == 2 and "--pool" in r.stderr
    r = berds("retrieve", "--questions", qs, "--corpus", corpus, "--qe", "offline", "--pool", corpus,
              "--out", tmp_path / "run.jsonl")
    assert r.returncode == 2 and "has no effect" in r.stderr


@pytest.mark.slow
def test_qe_pool_source_end_to_end(tmp_path):
    from berds_core.diversify import perspectives_for
    from berds_core.records import Question

    pool = write_pool(tmp_path)
    q = Question("q", "Should students wear school uniforms?", ["a"])
    persp = perspectives_for(q, "pool", pool=pool)
    assert persp and all(p in UNIFORMS + SPACE for p in persp)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "text": t}) + "\n" for i, t in enumerate(UNIFORMS + SPACE)))
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "q1", "question": q.question, "perspectives": ["a", "b"]}) + "\n")
    run = tmp_path / "run.jsonl"
    r = berds("retrieve", "--questions", qs, "--corpus", corpus, "--qe", "pool", "--pool", pool, "--k", "4",
              "--out", run, "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["diversify"] == {"method": "qe", "pipeline": "qe(source=pool)", "pool": str(pool)}
    entry = json.loads(run.read_text().splitlines()[0])
    assert len(entry["ctxs"]) == 4
