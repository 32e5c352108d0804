"""Browser events: stored once each, in order, through the role checks; bad events rejected one by one."""
import pytest

from berds_core.lab.access import Actor, Lab
from berds_core.lab.labelling import apply_events
from berds_core.lab.store import Pair, Store


@pytest.fixture()
def lab(tmp_path):
    s = Store(tmp_path / "e.db")
    s.add_pairs([Pair(f"p{i}", "q?", f"d{i}", "persp") for i in range(5)])
    s.tasks.create("t", {"ann": ["p0", "p1", "p2"], "other": ["p3", "p4"]})
    yield Lab(s, Actor("ann", "annotator"))
    s.close()


REFS = {"ra": "p0", "rb": "p1", "rc": "p2", "rx": "p3"}


def ev(cid, kind, ref=None, value=None, **kw):
    return {"cid": cid, "kind": kind, "ref": ref, "value": value, **kw}


def test_events_are_stored_once_in_order(lab):
    box = [ev("s-1", "label", "ra", 1, time_ms=812, note=" why ", unsure=True),
           ev("s-2", "skip", "rb", time_ms=40), ev("s-3", "label", "rc", 0, judge_visible=True)]
    res = apply_events(lab, box, REFS.get)
    assert res.acked == ["s-1", "s-2", "s-3"] and not res.rejected and res.last == ("p2", 0)
    s = lab.store
    a = s.get_label("ann", "p0")
    assert (a.label, a.unsure, a.note, a.time_ms) == (1, True, "why", 812)
    assert s.get_label("ann", "p1").skipped and s.get_label("ann", "p2").judge_visible is True
    # the page resends the same outbox (it has not seen the acknowledgement yet): nothing is stored twice
    res = apply_events(lab, box, REFS.get)
    assert res.acked == ["s-1", "s-2", "s-3"] and res.last is None
    assert len(s.history("ann")) == 3
    # an undo, resent, undoes once
    res = apply_events(lab, box + [ev("s-4", "undo", "rc")], REFS.get)
    assert res.undone == ["p2"]
    apply_events(lab, box + [ev("s-4", "undo", "rc")], REFS.get)
    assert s.get_label("ann", "p1").skipped and s.get_label("ann", "p2") is None


def test_bad_or_forbidden_events_are_rejected_alone(lab):
    box = [ev("s-1", "label", "ra", 2), ev("s-2", "label", "rx", 1), ev("s-3", "label", "unknown-ref", 1),
           {"cid": "s-4", "kind": "drop tables"}, "not an event", ev("s-5", "label", "rb", True),
           ev("s-6", "label", "rc", 1, note=["x"]), ev("s-7", "label", "rb", 0, time_ms=-5, note="n" * 5000)]
    res = apply_events(lab, box, REFS.get)
    assert set(res.rejected) == {"s-1", "s-2", "s-3", "s-4", "s-5", "s-6"}
    assert "outside their own queue" in res.rejected["s-2"]  # another annotator's pair: refused and logged
    assert res.acked == ["s-7"]
    lab7 = lab.store.get_label("ann", "p1")
    assert lab7.time_ms is None and len(lab7.note) == 1000
    assert lab.store.get_label("other", "p3") is None and lab.store.get_label("ann", "p3") is None
    assert lab.store.audit.rows(refused_only=True)[-1]["target"] == "p3"
    assert apply_events(lab, {"not": "a list"}, REFS.get).acked == []


def test_a_page_that_remembers_its_acknowledgements_resends_without_a_read(lab):
    """The Annotate page passes the ids it was told are stored: a resent outbox is acknowledged from that
    memory (no statement at all), and an event stored but not remembered goes to the store, which keeps it once."""
    box = [ev("m-1", "label", "ra", 1), ev("m-2", "label", "rb", 0)]
    acked: set[str] = set()
    res = apply_events(lab, box, REFS.get, acked)
    acked.update(res.acked)
    assert acked == {"m-1", "m-2"}
    seen: list[str] = []
    lab.store.set_trace(seen.append)
    try:
        res = apply_events(lab, box, REFS.get, acked)
    finally:
        lab.store.set_trace(None)
    assert res.acked == ["m-1", "m-2"] and res.last is None and seen == []
    res = apply_events(lab, box + [ev("m-3", "undo")], REFS.get, {"m-2"})  # m-1 forgotten: stored once all the same
    assert res.acked == ["m-1", "m-2", "m-3"] and res.undone == ["p1"]
    hist = lab.store.history("ann")
    assert [h["kind"] for h in hist] == ["label", "label", "undo"] and lab.store.get_label("ann", "p0").label == 1
