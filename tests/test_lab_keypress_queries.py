"""What one keypress on the Annotate page costs the lab's database, counted statement by statement.

A keypress is one decision sent through the page's own code path (an AppTest click on the y / n / s / u
shortcut buttons): the label stored, the gold-check floor applied, and the rerun that draws the next pair.
Every statement the store's SQLite connection executes is seen by ``sqlite3.Connection.set_trace_callback``
(:meth:`berds_core.lab.db.Database.set_trace`). A *query* is one read statement outside a write transaction,
or one write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``, with the reads it makes under its lock). The round
view (:mod:`berds_core.lab.round_view`) is read once per request, so a keypress costs at most 8 queries, in lab
mode with gold checks placed as the annotator goes, a floor that pauses, undo, and the session's idle clock
written (once a minute) on some of them.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from berds_core.lab.accounts import Accounts
from berds_core.lab.controls import set_controls
from berds_core.lab.store import Pair, Store

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "a long enough password"
MAX_QUERIES = 8


class Counter:
    """Statements of one request (``with Counter(store): ...``): all of them, and queries (a write transaction
    counts once)."""

    def __init__(self, store: Store):
        self.store = store
        self.statements: list[str] = []

    def __call__(self, sql: str) -> None:
        self.statements.append(" ".join(sql.split()))

    def __enter__(self) -> "Counter":
        self.store.set_trace(self)
        return self

    def __exit__(self, *exc) -> None:
        self.store.set_trace(None)

    @property
    def queries(self) -> int:
        n, in_tx = 0, False
        for sql in self.statements:
            head = sql.split(" ", 1)[0].upper()
            if head == "BEGIN":
                n, in_tx = n + 1, True
            elif head in ("COMMIT", "ROLLBACK"):
                in_tx = False
            elif not in_tx:
                n += 1
        return n


@pytest.fixture()
def lab_round(annotation_db_path, monkeypatch):
    """Lab mode; alice has 20 task pairs, a check rate of 1 in 4 drawn from a pool of 12 known answers, and a floor."""
    path = annotation_db_path
    monkeypatch.setenv("BERDS_AUTH", "lab")
    with Store(path) as s:
        s.add_pairs([Pair(f"p{i}", f"Question {i}?", f"document {i}", f"perspective {i}", question_id=f"q{i}",
                          title=f"Title {i}") for i in range(40)])
        s.tasks.create("round", {"alice": [f"p{i}" for i in range(20)], "bob": [f"p{i}" for i in range(10, 28)]})
        s.set_judge_preds("judgeX", {f"p{i}": (0.025 * i, int(i >= 20)) for i in range(40)})
        s.set_reference_labels({f"p{i}": i % 2 for i in range(28, 40)})
        s.checks.add_to_pool("round", [f"p{i}" for i in range(28, 40)], "test")
        set_controls(s, "round", check_rate=0.25, check_floor=0.6, check_min=3)
        Accounts(s).add("alice", "annotator", PASSWORD)
    return path


def _signed_in(ui: str = "simple") -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.query_params["ui"] = ui
    at.run()
    at.text_input(key="lab_login_name").input("alice")
    at.text_input(key="lab_login_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    return at


def _shown(at) -> int | None:
    """The number of the pair on screen (its question), or None."""
    for m in at.markdown:
        got = re.fullmatch(r"Question (\d+)\?", str(m.value))
        if got:
            return int(got.group(1))
    return None


def _press(at, store: Store, key: str) -> Counter:
    with Counter(store) as counter:
        at.button(key=key).click().run()
    assert not at.exception
    return counter


def test_a_keypress_costs_at_most_8_queries(lab_round):
    from studio_ui.lab_ui import get_store

    at = _signed_in()
    store = get_store(str(lab_round))  # the page's own store (one per database file)
    with Store(lab_round) as s:
        known = s.reference_labels()
    costs, keys, checks_seen = [], [], 0
    for step in range(40):
        if not at.get("button") or "btn_yes" not in [b.key for b in at.button]:
            break  # paused or done: no pair to decide
        n = _shown(at)
        pid = f"p{n}"
        if pid in known:  # a gold check (the page never says so; the test knows the answers): answer it wrong
            checks_seen += 1
            key = "btn_no" if known[pid] == 1 else "btn_yes"
        else:
            key = ("btn_yes", "btn_no", "btn_skip", "btn_undo")[step % 4]
        idle = step % 5 == 4
        if idle:  # a minute without a request: this keypress also restarts the session's idle clock (a write)
            with Store(lab_round) as s, s.transaction() as c:
                c.execute("UPDATE sessions SET last_seen = last_seen - 120")
        counter = _press(at, store, key)
        assert idle == any(s.startswith("UPDATE sessions") for s in counter.statements)
        costs.append(counter.queries)
        keys.append(key)
        assert counter.queries <= MAX_QUERIES, (key, counter.queries, counter.statements)
    # the presses did what a keypress does: labels stored, undos taken back, checks placed, the floor paused
    assert checks_seen >= 3 and "btn_undo" in keys and "btn_skip" in keys
    with Store(lab_round) as s:
        decided = {l.pair_id for l in s.labels("alice")}
        assert len(decided) >= 5
        assert any(a["kind"] == "check" for a in s.tasks.assignments("round") if a["annotator"] == "alice")
        assert [p["annotator"] for p in s.query("SELECT annotator FROM pauses WHERE resumed_at IS NULL")] == ["alice"]
    assert "paused" in " ".join(str(w.value) for w in at.warning)
    assert max(costs) <= MAX_QUERIES


def test_the_counter_sees_every_statement_of_a_request(lab_round):
    """The counter is no mock: a plain rerun reads the session and the round (and the next pair's text)."""
    from studio_ui.lab_ui import get_store

    at = _signed_in()
    store = get_store(str(lab_round))
    with Counter(store) as counter:
        at.run()
    joined = " | ".join(counter.statements)
    assert "FROM sessions" in joined and "FROM assignments" in joined and "FROM pairs" in joined
    assert 1 <= counter.queries <= MAX_QUERIES
    assert not any(s.startswith("BEGIN") for s in counter.statements)  # a rerun with no decision writes nothing


def _widget_data(at) -> dict:
    """What the keyboard widget was sent in the last run (its ``data``)."""
    def find(node):
        for child in getattr(node, "children", {}).values():
            proto = getattr(child, "proto", None)
            if proto is not None and getattr(proto, "component_name", "") == "berds_annotator":
                return json.loads(proto.json)
            got = find(child)
            if got is not None:
                return got
        return None

    return find(at._tree)


def test_a_keypress_in_the_keyboard_widget_costs_at_most_8_queries(lab_round):
    """The default interface: the widget's outbox carries the decision (as the browser sends it), the run stores
    it, asks the gate and sends the next pairs."""
    from studio_ui.lab_ui import get_store

    at = _signed_in("keyboard")
    store = get_store(str(lab_round))
    key = f"ann_widget_{_widget_data(at)['session']}"
    costs = []
    for step in range(10):
        data = _widget_data(at)
        assert data["pairs"] and not data["closed"]
        cid = f"k{step}"
        event = {"cid": cid, "kind": "undo"} if step % 4 == 3 else \
            {"cid": cid, "kind": "label" if step % 4 < 2 else "skip", "ref": data["pairs"][0]["ref"], "value": step % 2,
             "time_ms": 3000}
        at.session_state[key] = {"outbox": [event]}
        with Counter(store) as counter:
            at.run()
        assert not at.exception
        assert cid in _widget_data(at)["acked"]
        costs.append(counter.queries)
        assert counter.queries <= MAX_QUERIES, (event["kind"], counter.queries, counter.statements)
    with Store(lab_round) as s:
        assert len(s.labels("alice")) >= 4 and any(h["kind"] == "undo" for h in s.history("alice"))
    assert max(costs) <= MAX_QUERIES
