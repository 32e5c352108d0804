"""Server-side role checks: refusals are raised, written to the audit log and the logger."""
import logging

import pytest

from berds_core.lab.tasks import TaskSetSpec
from berds_core.lab.access import AccessDenied, Actor, Lab
from berds_core.lab.store import Pair, Store


@pytest.fixture()
def store(tmp_path):
    s = Store(tmp_path / "lab.db")
    s.add_pairs([Pair(f"p{i}", f"Question {i // 2}?", f"passage {i}", f"perspective {i}", question_id=f"q{i // 2}",
                      title=f"Title {i}") for i in range(6)])
    s.tasks.create("round1", {"alice": ["p0", "p1", "p2"], "bob": ["p2", "p3", "p4"]})
    s.set_judge_preds("judgeX", {f"p{i}": (0.9, 1) for i in range(6)})
    yield s
    s.close()


def lab(store, name, role):
    return Lab(store, Actor(name, role))


def refused(store, action):
    return [a for a in store.audit.rows(refused_only=True) if a["action"] == action]


def test_annotator_labels_only_their_own_queue(store, caplog):
    alice = lab(store, "alice", "annotator")
    assert alice.queue() == ["p0", "p1", "p2"] and alice.next_pairs(2) == ["p0", "p1"]
    view = alice.pair_view("p0")
    assert view == {"question": "Question 0?", "title": "Title 0", "document": "passage 0", "perspective": "perspective 0"}
    alice.label("p0", 1, time_ms=4200, client_id="c-1")
    with caplog.at_level(logging.WARNING, logger="berds.access"):
        with pytest.raises(AccessDenied):
            alice.label("p3", 1)  # bob's pair
        with pytest.raises(AccessDenied):
            alice.pair_view("p4")
    assert store.get_label("alice", "p3") is None
    assert len(refused(store, "label")) == 1 and len(refused(store, "pair.view")) == 1
    assert "refused label of alice (annotator) on p3" in caplog.text


def test_annotator_cannot_see_another_annotators_labels(store):
    store.label("bob", "p2", 0)
    alice = lab(store, "alice", "annotator")
    alice.label("p2", 1)
    assert [l.annotator for l in alice.labels()] == ["alice"]  # no name: their own only
    with pytest.raises(AccessDenied):
        alice.labels("bob")
    with pytest.raises(AccessDenied):
        alice.require_self("bob")  # e.g. ?annotator=bob in lab mode
    rows = refused(store, "labels.other")
    assert len(rows) == 2 and rows[0]["actor"] == "alice" and rows[0]["target"] == "bob"
    reviewer = lab(store, "rita", "reviewer")
    assert {l.annotator for l in reviewer.labels()} == {"alice", "bob"}


def test_judge_answer_only_after_labelling(store):
    alice = lab(store, "alice", "annotator")
    with pytest.raises(AccessDenied):
        alice.judge_answers("p1")
    assert refused(store, "judge.view")[0]["target"] == "p1"
    alice.label("p1", 0, client_id="c-9")
    assert alice.judge_answers("p1") == [("judgeX", 0.9, 1)]
    # having seen the judge, a relabel records that the judge's answer was known
    assert store.get_label("alice", "p1").judge_visible is False
    alice.label("p1", 1)
    assert store.get_label("alice", "p1").judge_visible is True
    # a reviewer may see it before labelling
    assert lab(store, "rita", "reviewer").judge_answers("p5")[0][2] == 1


def test_admin_actions_refused_for_annotators_and_reviewers(store, tmp_path):
    tsv = tmp_path / "x.tsv"
    tsv.write_text("question\tid\tdocument\tperspective\nq\tx1\td\tp\n", encoding="utf-8")
    for who, role in (("alice", "annotator"), ("rita", "reviewer")):
        l = lab(store, who, role)
        with pytest.raises(AccessDenied):
            l.import_pairs_tsv(tsv, annotator=who)
        with pytest.raises(AccessDenied):
            l.build_task_set([], TaskSetSpec(name="evil", source="x", n=1, strategy="random", annotators=(who,)))
        with pytest.raises(AccessDenied):
            l.export_rows("gold")
        with pytest.raises(AccessDenied):
            l.set_guidelines("<b>mine</b>")
        with pytest.raises(AccessDenied):
            l.accounts()
    assert not store.has_pair("x1") and store.tasks.names() == ["round1"]
    assert len(store.audit.rows(refused_only=True)) == 10
    # an annotator's own export is allowed and holds only their labels
    store.label("bob", "p3", 1)
    store.label("alice", "p0", 0)
    rows = lab(store, "alice", "annotator").export_rows("labels")
    assert [r["annotator"] for r in rows] == ["alice"]


def test_reviewer_adjudicates_and_sees_agreement_annotator_cannot(store):
    store.label("alice", "p2", 1)
    store.label("bob", "p2", 0)
    alice = lab(store, "alice", "annotator")
    with pytest.raises(AccessDenied):
        alice.agreement_report("judgeX", n_boot=10)
    with pytest.raises(AccessDenied):
        alice.disagreements("judgeX")
    with pytest.raises(AccessDenied):
        alice.adjudicate("p2", 1)
    rita = lab(store, "rita", "reviewer")
    assert [d["pair_id"] for d in rita.disagreements("judgeX")][0] == "p2"
    rita.adjudicate("p2", 1)
    assert store.gold() == {"p2": 1}
    assert rita.agreement_report("judgeX", n_boot=10)["iaa"]["pairs"]["alice|bob"]["n"] == 1


def test_admin_and_open_mode_pass_the_same_checks(store, tmp_path):
    admin = Lab(store, Actor("me", "admin", open_mode=True))
    admin.set_guidelines("# Rules\n<script>x</script>", {"1": "backs it", "junk": "ignored"})
    g = admin.guidelines()
    assert g["text"].startswith("# Rules") and g["definitions"]["1"] == "backs it" and "junk" not in g["definitions"]
    assert admin.export_rows("gold") == []
    with pytest.raises(ValueError):
        Actor("x", "superuser")
