"""One passage, one side (issue 62): which perspectives exclude each other, and the embedded judge's decision
for them, the same on every face that reads it (``berds judge``, ``judge-eval``, ``evaluate``, the Playground's
columns, the lab's judge labels)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from berds_core.judges import get_judge, judge_passages, judge_run
from berds_core.judges.groups import alternatives_of, exclusive_groups, negations_of_each_other, record_groups
from berds_core.judges.one_side import OneSideRule

from test_judges_embedded import PERSP, QUESTION  # the statement and its negation v4 read alone

PASSAGES = [
    "Nuclear plants produce almost no carbon dioxide while running, and France cut its emissions by "
    "building them. Expanding nuclear power is the fastest way to decarbonise electricity.",
    "Mix the flour with two eggs and a cup of milk, then bake the cake for forty minutes at 180 degrees.",
    "Reactor accidents such as Chernobyl and Fukushima show the danger, and new plants cost billions more "
    "than wind or solar. We should not build more reactors to fight climate change.",
    "Nuclear power is one of the options discussed for climate change; the debate about expanding it is "
    "about cost, safety and speed.",
]


# ------------------------------------------------------------------ which perspectives exclude each other

@pytest.mark.parametrize("a,b", [
    ("An increase in choice leads to unhappiness and stress.", "An increase in choice does not lead to unhappiness "
                                                              "and stress."),
    ("Society generally places too much importance on working.", "Society does not generally place too much "
                                                                 "importance on working."),
    ("There is an afterlife.", "There is no afterlife."),
    ("Acts of terrorism can ever be justified.", "Acts of terrorism can never be justified."),
    ("Racism can be eradicated", "Racism cannot be eradicated."),
    ("Financial readiness is a major reason why I am not married.",
     "Financial readiness is not a major reason why I am not married."),
    ("You don't feel safe on the road.", "You feel safe on the road."),
])
def test_a_statement_and_its_negation_exclude_each_other(a, b):
    assert negations_of_each_other(a, b) and negations_of_each_other(b, a)
    assert exclusive_groups([a, b]) == [(0, 1)]


@pytest.mark.parametrize("a,b", [
    ("Arranged marriages are better than love marriages.", "Love marriages are better than arranged marriages."),
    ("Cars cause pollution.", "Cars cause congestion."),  # two reasons, not opposites
    ("Cars do not cause pollution.", "Cars do not cause congestion."),
    ("Zoos protect endangered species.", "Zoos protect endangered species."),  # the same statement twice
    ("I am not unhappy.", "I am happy."),  # different words: no rule that holds
])
def test_other_pairs_stay_independent(a, b):
    assert not negations_of_each_other(a, b)
    assert exclusive_groups([a, b]) == []


def test_either_or_questions_group_their_two_alternatives():
    q = "Overall, do you think science has made life easier or more difficult for most people?"
    a, b = "Overall, you think science has made life easier for most people.", \
        "Overall, you think science has made life more difficult for most people."
    assert alternatives_of(q, a, b) and exclusive_groups([a, b], q) == [(0, 1)]
    assert exclusive_groups([a, b]) == []  # the question is what says they are alternatives
    assert not alternatives_of("Has science made life easier for most people?", a, b)


def test_lists_of_reasons_stay_independent_and_a_perspective_joins_one_group():
    reasons = ["Zoos protect endangered species.", "Zoos educate children.", "Zoos keep animals in small cages."]
    assert exclusive_groups(reasons, "Should zoos exist?") == []
    demo = ["Chess should be recognised as an Olympic sport.", "Chess is a mental sport like bridge.",
            "Chess should not be recognised as an Olympic sport.", "Chess lacks physical exertion."]
    assert exclusive_groups(demo) == [(0, 2)]
    # a perspective that would pair with two others: the rule cannot tell which is its opposite
    amb = ["Golf is a sport.", "Golf is not a sport.", "Golf is no sport."]
    assert exclusive_groups(amb) == []


def test_declared_sides_group_two_perspectives_and_a_line_keeps_its_groups():
    ps = ["It is time to end affirmative action.", "Affirmative action remains a necessity."]
    assert exclusive_groups(ps) == []
    assert exclusive_groups(ps, stances=["support", "oppose"]) == [(0, 1)]
    line = {"question": "q", "perspectives": ps, "stances": ["support", "oppose"]}
    assert record_groups(line) == [(0, 1)]
    assert record_groups({**line, "perspective_groups": []}) == []  # what a line records wins
    with pytest.raises(ValueError, match="perspective_groups"):
        record_groups({**line, "perspective_groups": [[0, 5]]})
    with pytest.raises(ValueError, match="perspective_groups"):
        record_groups({**line, "perspective_groups": [[0, 0]]})


# ------------------------------------------------------------------ the rule

def _rule(**kw):
    meta = {"head": {"mean": 0.5, "scale": 0.1, "coef": 1.0, "intercept": 0.0}, "calibration": {"kind": "none"},
            "side": {"a": 1.0, "b": 0.5}, "rule": "stance-2", "threshold": 0.3, "band": [0.2, 0.4],
            "stance_model": "side.npz"}
    meta.update(kw)
    return OneSideRule.from_meta(meta)


def test_member_probabilities_share_the_group_probability_and_the_side_decides():
    r = _rule()
    g = r.group_probability([0.5, 0.7])
    np.testing.assert_allclose(g, [0.5, 1 / (1 + np.exp(-2.0))])
    s = r.side_probability([2.0, -1.0], [0.0, 1.0], affirmative=False)
    np.testing.assert_allclose(s, [1 / (1 + np.exp(-2.0)), 1 / (1 + np.exp(2.0))])
    # the affirmative's prior: only when the first member is the group's affirmative
    np.testing.assert_allclose(r.side_probability([0.0], [0.0], affirmative=True), [1 / (1 + np.exp(-0.5))])
    # swapping the members swaps s
    np.testing.assert_allclose(r.side_probability([0.3], [1.2], False) + r.side_probability([1.2], [0.3], False), 1)
    M = r.member_probabilities(g, s)
    np.testing.assert_allclose(M.sum(1), g)
    assert M[0, 0] > M[0, 1] and M[1, 1] > M[1, 0]
    assert r.needs_side([0.19, 0.2, 0.9]).tolist() == [False, True, True]
    with pytest.raises(ValueError, match="stance-2"):
        _rule(rule="stance-1")
    assert _rule(threshold=0.5, band=[0.2, 0.4]).band == (0.2, 0.5)  # the band always holds the threshold


def test_the_affirmative_is_read_off_the_texts_never_the_order():
    from berds_core.judges.groups import affirmative_first

    a, n = "Space exploration is necessary.", "Space exploration is not necessary."
    assert affirmative_first((0, 1), [a, n]) == ((0, 1), True)
    assert affirmative_first((0, 1), [n, a]) == ((1, 0), True)
    q = "Has science made life easier or more difficult?"
    e, d = "Science has made life easier.", "Science has made life more difficult."
    assert affirmative_first((0, 1), [d, e], q) == ((1, 0), True)  # the alternative the question names first
    assert affirmative_first((0, 1), ["Cats are best.", "Dogs are best."]) == ((0, 1), False)


# ------------------------------------------------------------------ the shipped judge

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path))
    return tmp_path


def test_the_shipped_judge_says_supports_to_at_most_one_side_of_a_passage(cache):
    j = get_judge("embedded")
    assert j.one_side is not None and j.group_band is not None and j.name.startswith("embedded-cos-v5")
    P, L = judge_passages(j, PASSAGES, PERSP, QUESTION)
    assert P.shape == L.shape == (4, 2)
    assert not (L[:, 0] & L[:, 1]).any()
    # the members' probabilities split one group probability; the recipe is off the topic: nothing
    assert P[1].sum() == 0 and not L[1].any()
    # the side is the side reader's: the member its margins and the affirmative's prior favour
    m = j.stance_model.logits([(s, d) for d in PASSAGES for s in PERSP]).reshape(4, 2, 3)
    margin = m[:, :, 0] - m[:, :, 1]
    side = j.one_side.side_probability(margin[:, 0], margin[:, 1], affirmative=True)  # PERSP[0] is affirmative
    for d in (0, 2, 3):
        assert P[d].sum() > 0
        if P[d].sum() >= j.one_side.band[0]:  # the side is read where a member may count
            assert (P[d, 0] >= P[d, 1]) == (side[d] >= 0.5)
            np.testing.assert_allclose(P[d, 0] / P[d].sum(), side[d], rtol=1e-9)
        else:
            assert P[d, 0] == P[d, 1]
        assert L[d].sum() == (P[d].max() >= j.one_side.threshold)
    # listing the perspectives the other way round decides the same
    Pr, Lr = judge_passages(j, PASSAGES, PERSP[::-1], QUESTION)
    np.testing.assert_allclose(Pr[:, ::-1], P, rtol=1e-12)
    np.testing.assert_array_equal(Lr[:, ::-1], L)
    # each pair alone (no groups) is v4's closeness, both sides nearly equal
    P0, L0 = judge_passages(j, PASSAGES, PERSP, QUESTION, groups=[])
    assert abs(P0[0, 0] - P0[0, 1]) < 0.1
    # perspectives that do not exclude each other are judged as before
    other = [PERSP[0], "Solar panels are cheap."]
    P1, _ = judge_passages(j, PASSAGES, other, QUESTION)
    np.testing.assert_allclose(P1, judge_passages(j, PASSAGES, other, QUESTION, groups=[])[0])


def test_the_stance_model_reads_only_passages_that_may_support_a_side(cache, monkeypatch):
    j = get_judge("embedded")
    m = j.stance_model
    asked, logits = [], m.logits
    monkeypatch.setattr(m, "logits", lambda pairs, **kw: (asked.extend(pairs), logits(pairs, **kw))[1])
    judge_passages(j, PASSAGES, PERSP, QUESTION)
    assert asked and all(t != PASSAGES[1] for _, t in asked)  # never the recipe (off the topic: g is 0)
    assert {p for p, _ in asked} == set(PERSP)  # both members of each passage it reads
    again = m.n_encoded
    judge_passages(j, PASSAGES, PERSP, QUESTION)
    assert m.n_encoded == again  # read once: the embedding store and memory keep the stance encodings


def test_a_judged_run_records_its_groups_and_scores_the_same_from_the_file_alone(cache, tmp_path):
    from berds_core.experiment import score
    from berds_core.runs import read_run, write_run

    j = get_judge("embedded")
    e = {"id": "q", "question": QUESTION, "perspectives": PERSP,
         "ctxs": [{"id": str(i), "title": "", "text": t} for i, t in enumerate(PASSAGES)]}
    judge_run([e], j, progress=False)
    assert e["perspective_groups"] == [[0, 1]]
    assert e[j.name + "-group-band"] == [round(x, 6) for x in j.group_band]
    preds = np.array([c[j.name + "-preds"] for c in e["ctxs"]])
    P, L = judge_passages(j, PASSAGES, PERSP, QUESTION)
    np.testing.assert_array_equal(preds, L)
    path = tmp_path / "run.jsonl"
    write_run(path, [e])
    back = read_run(path)
    for policy in ("threshold", "confident"):
        a = score([e], judge=j.name, policy=policy)
        b = score(back, judge=j.name, policy=policy)
        assert a.as_dict() == b.as_dict()
        assert not (b.matrices[0][:, 0] & b.matrices[0][:, 1]).any()


def test_the_confident_policy_reads_the_group_band_for_members(cache):
    from berds_core.experiment import decide
    from berds_core.runs import pair_band, stored_band

    band, gb = (0.1, 0.2), (0.3, 0.5)
    lo, hi = pair_band(band, gb, [(0, 2)], (2, 3))
    assert lo.tolist() == [[0.3, 0.1, 0.3]] * 2 and hi.tolist() == [[0.5, 0.2, 0.5]] * 2
    probs = np.array([[0.45, 0.25, 0.0], [0.6, 0.15, 0.0]])
    labels = np.array([[True, True, False], [True, False, False]])
    L, unsure = decide(probs, labels, (lo, hi), "confident")
    assert L.tolist() == [[False, True, False], [True, False, False]] and unsure == 1
    line = {"perspectives": ["a", "b", "c"], "ctxs": [{}, {}], "j-band": list(band), "j-group-band": list(gb),
            "perspective_groups": [[0, 2]]}
    np.testing.assert_array_equal(stored_band(line, "j")[0], lo)
    assert stored_band({k: v for k, v in line.items() if k != "j-group-band"}, "j") == band


def test_judge_eval_and_judge_and_the_lab_give_one_verdict_per_pair(cache, tmp_path):
    """The CLI's judge-eval on a pairs TSV, berds judge on a run of the same passages and the lab's judge labels
    agree pair for pair, including a passage whose other side is not in the TSV."""
    from berds_core.lab.records import Pair
    from berds_core.lab.tasks import judge_probabilities

    tsv = tmp_path / "pairs.tsv"
    rows = ["question\tid\tdocument\tperspective\tlabel"]
    i = 0
    for d, text in enumerate(PASSAGES):
        for p, persp in enumerate(PERSP):
            if d == 3 and p == 1:
                continue  # this passage's other side is unlabelled
            i += 1
            rows.append(f"{QUESTION}\t{i}\t{text}\t{persp}\t{int(d == 0 and p == 0)}")
    tsv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "judged.tsv"
    r = subprocess.run([sys.executable, "-m", "berds_core", "judge-eval", "--pairs", str(tsv), "--judge", "embedded",
                        "--out", str(out), "--json", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = [line.split("\t") for line in out.read_text().splitlines()[1:]]
    cli = {(g[2], g[3]): int(g[-1]) for g in got}
    j = get_judge("embedded")
    _, L = judge_passages(j, PASSAGES, PERSP, QUESTION)
    for (doc, persp), lab in cli.items():
        assert lab == int(L[PASSAGES.index(doc), PERSP.index(persp)]), (doc[:30], persp)
    pairs = [Pair(pair_id=f"p{d}{p}", question=QUESTION, document=PASSAGES[d], perspective=PERSP[p],
                  question_id="q", passage_id=str(d), perspective_index=p) for d in range(4) for p in range(2)]
    lab = judge_probabilities(pairs[:7], j, context=pairs)  # the last pair's partner is read from the context
    for pr in pairs[:7]:
        assert lab[pr.pair_id][1] == int(L[int(pr.passage_id), pr.perspective_index])
    assert json.loads(r.stdout)["judge"] == j.name


def test_chips_read_each_pairs_own_band_and_never_say_supports_for_the_side_not_decided(cache):
    from berds_core.studio.columns import counted_labels, judge_verdicts

    j = get_judge("embedded")
    glo, ghi = j.group_band
    lo, hi = j.band
    between = (max(j.threshold, lo) + glo) / 2 if glo > max(j.threshold, lo) else None
    # members of a group read the group band; the third perspective, the pair band
    probs = np.array([[ghi + 0.01, ghi + 0.005, hi + 0.01],
                      [glo - 1e-4, 0.0, (lo + hi) / 2]])
    labels = np.array([[True, False, True], [False, False, (lo + hi) / 2 >= j.threshold]])
    v = judge_verdicts(j, probs, [(0, 1)], labels)
    assert v[0].tolist() == [1, 0, 1]  # the side not decided is never "supports", even above the band
    assert v[1, 0] == -1 and v[1, 2] == 0
    if between is not None:  # above the pair threshold but below the group band: no
        assert judge_verdicts(j, np.array([[between, 0.0]]), [(0, 1)])[0, 0] == -1
    counted, verdict = counted_labels(j, probs, labels, "confident", [(0, 1)])
    assert counted.tolist() == [[True, False, True], [False, False, False]]


def test_the_v4_judge_stays_reachable_by_its_spec_and_a_wrong_variant_is_one_line():
    from berds_core.judges import get_judge, parse_spec
    from berds_core.specs import SpecError

    assert parse_spec("embedded") == parse_spec("embedded:v5") == ("embedded", {"variant": None})
    v4, v5 = get_judge("embedded:v4"), get_judge("embedded")
    v4.load(), v5.load()
    assert v4.name.startswith("embedded-cos-v4-") and v5.name.startswith("embedded-cos-v5-")
    assert v4.one_side is None and v5.one_side is not None  # v4 reads each pair alone
    with pytest.raises(SpecError) as e:
        parse_spec("embedded:v9")
    assert "v9" in str(e.value) and "\n" not in str(e.value)
