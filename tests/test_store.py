"""The annotation store, task sets, and the proofs with real processes (SIGKILL, 8 writers)."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from berds_core.errors import InputError
from berds_core.lab import rounds
from berds_core.lab.store import SCHEMA_VERSION, Pair, Store, StoreError, default_db_path
from berds_core.lab.tasks import assign_pairs, pairs_from_runs, read_pairs_tsv, sample_pairs


def _next(store, annotator):
    """The annotator's next pair: the round's one answer (the page's and ``berds annotations progress``'s)."""
    return rounds.summary(store, annotator)["next"]


ROOT = Path(__file__).resolve().parents[1]


def _pairs(n, subset=None):
    return [Pair(f"p{i}", f"question {i // 3}?", f"document {i}", f"perspective {i % 3}",
                 subset=subset(i) if subset else None) for i in range(n)]


@pytest.fixture()
def store(tmp_path):
    s = Store(tmp_path / "ann" / "t.db")
    s.add_pairs(_pairs(6))
    yield s
    s.close()


def test_pragmas_schema_and_env_default(store, tmp_path, monkeypatch):
    c = store._conn
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert c.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert c.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert store.schema_version == SCHEMA_VERSION
    monkeypatch.setenv("BERDS_ANNOTATIONS_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("BERDS_ANNOTATIONS_DB")
    assert default_db_path() == Path("annotations/berds.db")


def test_reopen_keeps_data_and_newer_schema_is_refused(store):
    store.label("ann", "p1", 1)
    path = store.path
    store.close()
    s2 = Store(path)
    assert s2.get_label("ann", "p1").label == 1 and s2.count_pairs() == 6
    s2._conn.execute("INSERT INTO schema_version VALUES (?, 'later')", (SCHEMA_VERSION + 1,))
    s2.close()
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_the_tables_write_in_the_store_s_one_transaction(store):
    """issue 64: the store holds its table groups as objects (``store.tasks``, ``store.settings``, ``store.audit``,
    ``store.checks``, ...) over its one connection: a batch across them is all or nothing, and the clock is the
    store's."""
    with pytest.raises(StoreError):
        with store.batch():
            store.tasks.create("t", {"ann": ["p0", "p1"]})
            store.settings.set("guidelines", "read me", by="lead")
            store.audit.add("lead", "admin", "edit_guidelines", "guidelines", allowed=True)
            store.label("ann", "nope", 1)  # no such pair: the whole batch goes
    assert store.tasks.names() == [] and store.settings.get("guidelines", "none") == "none" and store.audit.rows() == []
    store.tasks.create("t", {"ann": ["p0", "p1"]})
    store.now = lambda: "2030-01-01T00:00:00.000+00:00"
    assert store.checks.add_pause("t", "ann", reason="lead", message="m", lead_message="l", accuracy=None, checks=None)
    assert store.checks.open_pause("t", "ann")["at"] == "2030-01-01T00:00:00.000+00:00"
    assert store.tasks.queue("ann") == ["p0", "p1"] and store.tasks.info("t")["name"] == "t"
    assert not hasattr(store, "create_task_set") and not hasattr(store, "setting") and not hasattr(store, "next_pair")


def test_label_history_undo_and_skip(store):
    store.tasks.create("t", {"ann": ["p0", "p1", "p2"]})
    assert _next(store, "ann") == "p0"
    store.label("ann", "p0", 1, note="clear")
    store.label("ann", "p1", "skip")
    assert _next(store, "ann") == "p2"
    assert rounds.progress(store, "ann") == {"total": 3, "done": 2, "labelled": 1, "skipped": 1, "remaining": 1}
    store.label("ann", "p0", 0, unsure=True)  # relabel
    lab = store.get_label("ann", "p0")
    assert lab.label == 0 and lab.unsure and lab.note is None
    # undo the relabel -> back to 1 with its note; undo the skip; undo the first label
    assert store.undo("ann") == "p0"
    lab = store.get_label("ann", "p0")
    assert lab.label == 1 and lab.note == "clear" and not lab.unsure
    assert store.undo("ann") == "p1"
    assert store.get_label("ann", "p1") is None
    assert _next(store, "ann") == "p1"
    assert store.undo("ann") == "p0"
    assert store.get_label("ann", "p0") is None
    assert store.undo("ann") is None
    kinds = [e["kind"] for e in store.history("ann")]
    assert kinds == ["label", "skip", "label", "undo", "undo", "undo"]
    with pytest.raises(StoreError):
        store.label("ann", "nope", 1)
    with pytest.raises(StoreError):
        store.label("ann", "p0", 2)
    with pytest.raises(StoreError):
        store.label("  ", "p0", 1)
    assert store.labels() == []


def test_queue_is_stable_and_private(store):
    store.tasks.create("first", {"a": ["p3", "p1"], "b": ["p1", "p2"]})
    store.tasks.create("second", {"a": ["p5", "p1"]})
    assert store.tasks.queue("a") == ["p3", "p1", "p5"]  # set order, then position; duplicates once
    assert store.tasks.queue("a", "second") == ["p5", "p1"]
    store.label("b", "p1", 1)
    assert _next(store, "a") == "p3"  # b's label is not a's
    store.label("a", "p3", 0)
    assert _next(store, "a") == "p1"
    assert store.tasks.names("b") == ["first"] and store.tasks.annotators() == ["a", "b"]
    assert [l.annotator for l in store.labels("a")] == ["a"]


def test_adjudication_and_judge_preds(store):
    store.adjudicate("p2", 1, "lead")
    store.adjudicate("p2", 0, "lead", note="on reflection")
    assert store.gold() == {"p2": 0}
    assert [e["kind"] for e in store.history(pair_id="p2")] == ["adjudicate", "adjudicate"]
    store.set_judge_preds("emb", {"p0": (0.7, 1), "p1": (None, 0)})
    assert store.judge_preds("emb") == {"p0": (0.7, 1), "p1": (None, 0)}
    assert store.judges() == ["emb"]


TSV = ('question\tid\tdocument\tperspective\tlabel\n'
       'Is X good?\t17\t"He said ""yes""\nand left."\tX is good.\t1\n'
       'Is X good?\tabc\tplain text\tX is bad.\t0\n'
       'Is Y good?\t9\tother\tY is good.\t\n')


def test_read_pairs_tsv_quotes_multiline_and_ids(tmp_path):
    p = tmp_path / "pairs.tsv"
    p.write_text(TSV, encoding="utf-8")
    rows = read_pairs_tsv(p)
    assert [(line, pair.pair_id, lab) for line, pair, lab in rows] == [(2, "17", 1), (4, "abc", 0), (5, "9", None)]
    assert rows[0][1].document == 'He said "yes"\nand left.'


@pytest.mark.parametrize("body, line, field", [
    ("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\tyes\n", 2, "label"),
    ("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\t1\nq\t1\td2\tp\t0\n", 3, "id"),
    ("question\tid\tdocument\tperspective\tlabel\nq\t1\t\tp\t1\n", 2, "document"),
    ("question\tid\tdocument\tlabel\nq\t1\td\t1\n", 1, "perspective"),
    ("question\tid\tdocument\tperspective\tlabel\nq\t1\td\tp\n", 2, None),
])
def test_read_pairs_tsv_errors_name_line_and_field(tmp_path, body, line, field):
    p = tmp_path / "bad.tsv"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_pairs_tsv(p)
    assert e.value.line == line and e.value.field == field and str(p) in str(e.value)


def test_pairs_from_runs_and_stored_judge_labels():
    entry = {"id": "q1", "question": "Q?", "perspectives": ["A", "B"], "subset": "kialo",
             "ctxs": [{"id": "d1", "title": "", "text": "t1"}, {"id": "d2", "title": "T", "text": "t2"},
                      {"id": "d3", "title": "", "text": "t3"}],
             "j-preds": [[True, False], [False, False], [False, True]]}
    pairs, stored = pairs_from_runs([("bm25", [entry])], k=2)
    assert [p.pair_id for p in pairs] == ["bm25:q1:d1:0", "bm25:q1:d1:1", "bm25:q1:d2:0", "bm25:q1:d2:1"]
    # the title stays apart from the passage text (shown apart); the judge reads what judge_run reads
    from berds_core.judges import passage_text
    assert pairs[2].document == "t2" and pairs[2].title == "T"
    assert pairs[2].judge_text() == passage_text({"text": "t2", "title": "T"}) == "t2 T"
    assert pairs[0].retriever == "bm25" and pairs[0].subset == "kialo"
    assert stored == {"j": {"bm25:q1:d1:0": 1, "bm25:q1:d1:1": 0, "bm25:q1:d2:0": 0, "bm25:q1:d2:1": 0}}


def test_sampling_strategies():
    pairs = _pairs(30, subset=lambda i: "big" if i < 24 else "small")
    r = sample_pairs(pairs, 10, "random", seed=1)
    assert len({p.pair_id for p in r}) == 10 and r == sample_pairs(pairs, 10, "random", seed=1)
    assert r != sample_pairs(pairs, 10, "random", seed=2)
    s = sample_pairs(pairs, 10, "stratified", seed=0)
    # equal shares: 5 + 5 (small has 6) -> interleaved big, small, big, small...
    assert sum(p.subset == "small" for p in s) == 5
    assert [p.subset for p in s[:2]] == ["big", "small"]
    s = sample_pairs(pairs, 20, "stratified")  # small capped at 6, the rest from big
    assert sum(p.subset == "small" for p in s) == 6 and len(s) == 20
    probs = {p.pair_id: i / 29 for i, p in enumerate(pairs)}  # p14 -> 0.483, p15 -> 0.517
    u = sample_pairs(pairs, 4, "uncertain", probs=probs)
    assert {p.pair_id for p in u[:2]} == {"p14", "p15"} and {p.pair_id for p in u[2:]} == {"p13", "p16"}
    with pytest.raises(ValueError):
        sample_pairs(pairs, 3, "uncertain")
    assert len(sample_pairs(pairs, 100, "random")) == 30


def test_assign_pairs_overlap():
    ids = [f"p{i}" for i in range(50)]
    plan = assign_pairs(ids, ["a", "b", "c"], overlap=0.2, seed=4)
    counts = {}
    for a, v in plan.items():
        assert len(v) == len(set(v))
        assert v == [p for p in ids if p in set(v)]  # queue keeps the sample order
        for p in v:
            counts[p] = counts.get(p, 0) + 1
    assert set(counts) == set(ids)
    assert sum(c == 2 for c in counts.values()) == 10  # 20% of 50 to two annotators
    assert sum(len(v) for v in plan.values()) == 60
    assert max(map(len, plan.values())) - min(map(len, plan.values())) <= 1
    assert assign_pairs(ids, ["a", "b"], 0.0)["a"] == ids[0::2]
    with pytest.raises(ValueError):
        assign_pairs(ids, ["a"], 0.5)
    with pytest.raises(ValueError):
        assign_pairs(ids, ["a", "a"], 0.0)


# ---- real processes ----

WORKER = textwrap.dedent("""
    import sys, time, os
    from berds_core.lab.store import Store
    db, annotator, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = Store(db)
    while go != "-" and not os.path.exists(go):
        time.sleep(0.005)
    for i in range(n):
        pid = f"p{i}"
        label = (len(annotator) + i) % 2  # known per annotator, differs between annotators
        store.label(annotator, pid, label, note=f"{annotator}/{pid}")
        print(f"ack {pid} {label}", flush=True)
""")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _make_db(path, n):
    with Store(path) as s:
        s.add_pairs(_pairs(n))


def test_sigkill_right_after_ack_loses_nothing(tmp_path):
    db = tmp_path / "kill.db"
    _make_db(db, 5000)
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(db), "killme", "5000", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    acked = []
    try:
        for line in proc.stdout:
            acked.append(line.split()[1:])
            if len(acked) == 60:
                os.kill(proc.pid, signal.SIGKILL)  # right after the 60th acknowledgement
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    assert len(acked) == 60
    with Store(db) as s:
        got = {l.pair_id: l.label for l in s.labels("killme")}
        for pid, lab in acked:
            assert got.get(pid) == int(lab), f"acknowledged label of {pid} lost"
        # the history agrees with the current labels, nothing half-written
        events = [e for e in s.history("killme") if e["kind"] == "label"]
        assert len(events) == len(got) >= 60
        assert s._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_eight_concurrent_annotators_lose_nothing(tmp_path):
    n, names = 40, [f"annotator{i}" + "x" * i for i in range(8)]
    db = tmp_path / "conc.db"
    _make_db(db, n)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(db), name, str(n), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for name in names]
    time.sleep(1.0)
    go.write_text("go")  # all start writing at once: maximal contention
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "locked" not in err
        assert len(out.splitlines()) == n
    with Store(db) as s:
        all_labels = s.labels()
        assert len(all_labels) == 8 * n
        for name in names:
            mine = {l.pair_id: l for l in s.labels(name)}
            assert len(mine) == n
            for i in range(n):
                lab = mine[f"p{i}"]
                assert lab.label == (len(name) + i) % 2 and lab.note == f"{name}/p{i}"
        assert len(s.history()) == 8 * n


# ---- schema v2: migration, provenance, idempotent browser events, rounds ----

def test_version_1_database_is_upgraded_in_place(tmp_path):
    from berds_core.lab.db import SCHEMA_V1

    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL);"
                      + SCHEMA_V1 + "INSERT INTO schema_version VALUES (1, 'then');")
    con.execute("INSERT INTO pairs (pair_id, question, document, perspective, seq) VALUES ('p0', 'q', 'd', 'p', 1)")
    con.execute("INSERT INTO labels VALUES ('p0', 'ann', 1, 0, 0, 'old note', 'then')")
    con.commit()
    con.close()
    with Store(path) as s:
        assert s.schema_version == SCHEMA_VERSION == 6
        lab = s.get_label("ann", "p0")
        assert lab.label == 1 and lab.note == "old note" and lab.time_ms is None and lab.app_version is None
        assert s.pair("p0").title is None
        s.label("ann", "p0", 0, time_ms=1500, judge_visible=False)  # and the upgraded tables take new rows
        assert s.undo("ann") == "p0" and s.get_label("ann", "p0").note == "old note"


def test_label_provenance_and_idempotent_client_events(store):
    from berds_core.lab.store import app_version

    e1 = store.label("ann", "p0", 1, time_ms=2345, judge_visible=False, client_id="tab1-0001")
    lab = store.get_label("ann", "p0")
    assert (lab.time_ms, lab.judge_visible, lab.app_version) == (2345, False, app_version())
    assert app_version().startswith("berds ")
    # the browser resends an event it has not seen acknowledged: nothing changes
    assert store.label("ann", "p0", 0, client_id="tab1-0001") == e1
    assert store.get_label("ann", "p0").label == 1 and len(store.history("ann")) == 1
    assert store.applied_client_ids(["tab1-0001", "tab1-0002"]) == {"tab1-0001"}
    assert store.undo("ann", client_id="tab1-0002") == "p0"
    assert store.undo("ann", client_id="tab1-0002") is None  # the same undo twice undoes once
    assert store.get_label("ann", "p0") is None


def test_batch_is_all_or_nothing(store):
    with pytest.raises(StoreError):
        with store.batch():
            store.add_pairs([Pair("new1", "q", "d", "p")])
            store.tasks.create("t", {"ann": ["new1"]})
            store.set_reference_labels({"missing-pair": 1})
    assert not store.has_pair("new1") and store.tasks.names() == []


def test_unsure_pairs_are_routed_to_a_second_annotator(store):
    store.tasks.create("r", {"a": ["p0", "p1"], "b": ["p2", "p3"], "c": ["p4"]}, params={"route_unsure": True})
    store.label("a", "p0", 1, unsure=True)
    # c has the fewest pairs, so c gets p0, at the end of their queue, as a routed assignment
    assert store.tasks.queue("c") == ["p4", "p0"]
    assert [a["kind"] for a in store.tasks.assignments("r") if a["pair_id"] == "p0"] == ["task", "routed"]
    store.label("c", "p0", 0, unsure=True)  # route_max (2) reached: no third annotator
    assert sum(a["pair_id"] == "p0" for a in store.tasks.assignments("r")) == 2
    store.label("a", "p1", 1)  # sure: stays with a
    assert sum(a["pair_id"] == "p1" for a in store.tasks.assignments("r")) == 1
    store.tasks.create("plain", {"a": ["p5"], "b": []})
    store.label("a", "p5", 1, unsure=True)  # this set does not route
    assert store.tasks.queue("b", "plain") == []


def test_rounds_redundancy_uncertain_routing_and_calibration(tmp_path):
    from types import SimpleNamespace

    from berds_core.lab.tasks import TaskSetSpec, build_task_set

    s = Store(tmp_path / "r.db")
    cands = _pairs(30, subset=lambda i: "s")
    probs = {p.pair_id: (0.5 if i % 5 == 0 else 0.95) for i, p in enumerate(cands)}  # p0, p5, ... uncertain

    def predict(pairs):
        import numpy as np
        pr = np.asarray([probs[next(c.pair_id for c in cands if c.document == d)] for d, _ in pairs])
        return pr, pr >= 0.5

    judge = SimpleNamespace(name="fake", predict=predict)
    ref = {f"p{i}": i % 2 for i in range(20, 30)}  # reference labels for p20..p29 (outside the sample)
    with pytest.raises(ValueError, match="reference"):  # no pair with a reference label known yet
        build_task_set(s, cands[:20], TaskSetSpec(name="round", source="test", n=20, strategy="random",
                                                  annotators=("a", "b", "c"), calibration=3, seed=1), judge=judge)
    assert s.tasks.names() == [] and s.count_pairs() == 0  # nothing written
    s.close()
    s = Store(tmp_path / "r2.db")
    s.add_pairs(cands[20:])
    s.set_reference_labels(ref, source="paper")
    res = build_task_set(s, cands[:20], TaskSetSpec(name="round", source="test", n=20, strategy="random",
                                                    annotators=("a", "b", "c"), route_uncertain=0.1, calibration=3,
                                                    seed=1), judge=judge)
    assert res["routed_uncertain"] == 4 and res["calibration"] == 3
    rows = s.tasks.assignments("round")
    calib = {r["pair_id"] for r in rows if r["kind"] == "calibration"}
    assert len(calib) == 3 and calib <= set(ref)
    for ann in "abc":  # every annotator gets every calibration pair, somewhere in the queue
        assert calib <= set(s.tasks.queue(ann, "round"))
    per_pair = {}
    for r in rows:
        per_pair.setdefault(r["pair_id"], set()).add(r["annotator"])
    for pid in ("p0", "p5", "p10", "p15"):  # judge-uncertain: two annotators each
        assert len(per_pair[pid]) == 2
    assert all(len(per_pair[f"p{i}"]) == 1 for i in range(20) if i % 5)
    # every pair by n annotators (redundancy): overlap 1, per_shared n
    res = build_task_set(s, cands[:6], TaskSetSpec(name="double", source="test", n=6, strategy="random",
                                                   annotators=("a", "b", "c"), overlap=1.0, per_shared=2))
    per_pair = {}
    for r in s.tasks.assignments("double"):
        per_pair.setdefault(r["pair_id"], set()).add(r["annotator"])
    assert res["shared"] == 6 and all(len(v) == 2 for v in per_pair.values())
    with pytest.raises(ValueError, match="reference"):
        build_task_set(s, cands[:5], TaskSetSpec(name="x", source="t", n=5, strategy="random", annotators=("a", "b"),
                                                 calibration=50))
    s.close()


def test_demo_task_set_from_the_bundle(tmp_path):
    from berds_core.lab.tasks import build_demo_task_set, demo_candidates

    pairs, labels = demo_candidates()
    assert len(pairs) > 500 and 0.1 < sum(labels.values()) / len(labels) < 0.4
    assert all(p.title and not p.document.startswith(p.title) for p in pairs[:20])  # title kept apart
    assert {p.side for p in pairs} >= {"support", "oppose"}
    with Store(tmp_path / "demo.db") as s:
        res = build_demo_task_set(s, ["me", "you"], n=24, overlap=0.5, calibration=2)
        assert res["pairs"] == 24 and res["calibration"] == 2
        assert len(s.reference_labels()) == 26  # the sampled and calibration pairs carry the demo's gold
        assert len({p.subset for p in s.pairs()}) >= 6  # stratified by subset
        assert _next(s, "me") is not None


def test_pair_judge_text_follows_the_judge():
    """A pair is judged on the same text as the run passage it came from: the embedded judge reads the text
    (the string dense retrieval embeds), an LLM judge the evaluator's text + " " + title."""
    from berds_core.judges import get_judge, passage_text
    from berds_core.lab.tasks import judge_probabilities

    entry = {"id": "q1", "question": "Q?", "perspectives": ["A"], "ctxs": [{"id": "d", "title": "T", "text": "t"}]}
    (pair,), _ = pairs_from_runs([("r", [entry])], k=1)
    embedded = get_judge("embedded")
    assert pair.judge_text(embedded) == passage_text(entry["ctxs"][0], embedded) == "t"
    seen = []

    class LLMLike:  # any judge without its own document(): reads what the evaluator reads
        def predict(self, pairs):
            seen.extend(pairs)
            return [0.9] * len(pairs), [True] * len(pairs)

    assert judge_probabilities([pair], LLMLike().predict) == {pair.pair_id: (0.9, 1)}
    assert seen == [("t T", "A")]


def test_four_writers_one_sigkilled_lose_nothing_acknowledged(tmp_path):
    """The lab audit's durability check, bounded: four writers on one file, a few hundred labels, one SIGKILL
    in the middle; every acknowledged label of every writer is on disk and the file is intact."""
    n, names = 120, ["w1", "w22", "w333", "victim"]
    db = tmp_path / "four.db"
    _make_db(db, n)
    go = tmp_path / "go"
    procs = {name: subprocess.Popen([sys.executable, "-c", WORKER, str(db), name, str(n), str(go)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for name in names}
    time.sleep(1.0)
    go.write_text("go")
    acked = {name: [] for name in names}
    victim = procs["victim"]
    try:
        for line in victim.stdout:
            acked["victim"].append(line.split()[1:])
            if len(acked["victim"]) == 40:
                os.kill(victim.pid, signal.SIGKILL)  # mid-run, right after an acknowledgement
                break
        for name in names[:3]:
            out, err = procs[name].communicate(timeout=300)
            assert procs[name].returncode == 0, err
            acked[name] = [line.split()[1:] for line in out.splitlines()]
    finally:
        for p in procs.values():
            p.kill()
            p.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert sum(map(len, acked.values())) >= 3 * n + 40
    with Store(db) as s:
        for name in names:
            got = {l.pair_id: l.label for l in s.labels(name)}
            lost = [pid for pid, lab in acked[name] if got.get(pid) != int(lab)]
            assert not lost, f"{name}: acknowledged labels lost: {lost[:5]}"
        assert s._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
