"""The attackers of issue 63's audit, simulated (lab/attacks.py, lab/simulate.py): the order attacker finds an
inserted pair in a stratified queue and finds nothing when a check takes a task's place; the skipper and the
strategic gamer with every channel are paused, an honest annotator is not, in each queue shape."""
from __future__ import annotations

import numpy as np
import pytest

from berds_core.lab.attacks import OrderReader, PlacementTimer
from berds_core.lab.controls import RoundControls
from berds_core.lab.simulate import parse_simulation, simulate_round
from berds_core.lab.store import Store
from berds_core.lab.tasks import build_demo_task_set

STRATA = ["a", "b", "c", "d"]


def _blocks(rng, n_blocks):
    return [s for _ in range(n_blocks) for s in rng.permutation(STRATA).tolist()]


def _flagged(queue, lookahead=5):
    """Positions the order attacker flags, walking the queue with ``lookahead`` pairs ahead."""
    r, out = OrderReader(STRATA), []
    for i, s in enumerate(queue):
        if r.flags(queue[i:i + 1 + lookahead]):
            out.append(i)
        r.seen(s)
    return out


def test_the_order_attacker_finds_an_inserted_pair_and_nothing_in_whole_blocks():
    rng = np.random.default_rng(0)
    queue = _blocks(rng, 30)
    assert _flagged(queue) == []  # whole blocks: nothing to explain away
    # a pair inserted into a block (what a check was): the fewest-insertions explanation finds it
    hits = 0
    for trial in range(40):
        q = _blocks(rng, 30)
        at = int(rng.integers(8, len(q) - 8))
        q.insert(at, str(rng.choice(STRATA)))
        got = _flagged(q)
        hits += at in got
        assert len(got) <= 6  # the explanation is local: a few pairs around it at most
    assert hits >= 30
    # the same pair taking the place of a task of its stratum (what a check does now): nothing to find
    assert _flagged(_blocks(rng, 30)) == []
    # an unknown stratum is an insertion whatever else
    assert OrderReader(STRATA).flags(["z", "a"])


def test_the_placement_timer_marks_what_came_into_view_in_a_slow_run():
    t = PlacementTimer(factor=1.5)
    for i in range(12):  # runs of the usual length: nothing marked, whatever comes into view
        assert t.run(0.010, [f"p{j}" for j in range(i, i + 6)]) == []
    assert t.run(0.050, [f"p{j}" for j in range(12, 18)]) == ["p17"]  # a slow run: what it brought into view
    assert t.run(0.010, [f"p{j}" for j in range(13, 19)]) == ["p18"]  # and the run after it (placed past the view)
    assert t.run(0.010, [f"p{j}" for j in range(14, 20)]) == []
    assert t.flags("p17") and t.flags("p18") and not t.flags("p16") and not t.flags("p19")


SHAPES = {"one": 1, "pair": 2}


# the strategic gamer's placement timer reads this machine's run times (see below): on a loaded machine one round
# can leave it under the pause line (CI, 2026-12-07: the "pair" shape once, passing on every other run); a
# gamer that is no longer paused fails all three tries
@pytest.mark.flaky(reruns=2, reruns_delay=1)
@pytest.mark.parametrize("shape", ["one", "pair", "many"])
def test_every_queue_shape_pauses_the_skipper_and_the_strategic_gamer_and_not_the_honest(tmp_path, shape):
    """One simulated round (seed 4) per shape of bench/lab_reliability.py's; the held-out figures over 20 seeds are
    in docs/annotation-lab.md."""
    names = ["good", "skip", "strat", "order"]
    spec = "good=0.95,skip=skipper,strat=strategic,order=order"
    s = Store(tmp_path / "lab.db")
    controls = RoundControls(check_rate=0.1, check_floor=0.7, seed=4)
    if shape == "many":
        build_demo_task_set(s, names, n=240, overlap=1.0, per_shared=3, seed=4, controls=controls)
    else:
        size = SHAPES[shape]
        for i in range(0, len(names), size):
            extra = {"overlap": 1.0, "per_shared": 2} if size == 2 else {}
            build_demo_task_set(s, names[i:i + size], name=f"set{i}", n=240, seed=4, controls=controls, **extra)
    res = simulate_round(s, parse_simulation(spec, names), s.reference_labels(), seed=4)["annotators"]
    assert res["skip"]["paused"] and res["strat"]["paused"] and not res["good"]["paused"]
    assert res["skip"]["attack"]["skipped"] >= 5
    # the strategic gamer skips each pair its before-decision channels flag, once (a pair both flag counts in
    # both); how many: the placement timer reads the machine's own run times, not the same from run to run
    strat = res["strat"]["attack"]
    before = [f["checks"] + f["tasks"] for f in (strat["flagged"].get(c, {"checks": 0, "tasks": 0})
                                                 for c in ("order", "placement"))]
    assert max(before) <= strat["skipped"] <= sum(before)
    order = res["order"]["attack"]
    flagged = order["flagged"].get("order", {"checks": 0, "tasks": 0})
    if shape != "many":  # whole blocks: what it flags are the tasks a check moved to the end, and the checks there
        assert flagged["checks"] <= max(2, 1.5 * order["served"]["check"] * flagged["tasks"] / order["served"]["task"])


def test_the_demo_verb_simulates_the_attackers_and_reports_what_they_flagged(tmp_path, capsys):
    import json

    from berds_core.cli import main

    code = main(["annotations", "demo", "--db", str(tmp_path / "d.db"), "--annotators", "a,b,c", "--n", "90",
                 "--check-rate", "0.2", "--check-floor", "0.7", "--simulate", "a=skipper,b=0.95,c=order", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    res = json.loads(out)
    assert "a" in res["paused"] and "b" not in res["paused"]
    sim = res["simulation"]
    assert sim["a"]["kind"] == "skipper" and sim["a"]["attack"]["skipped"] >= 5 and sim["a"]["check_accuracy"] == 0.0
    assert set(sim["c"]["attack"]["served"]) <= {"check", "task"} and "attack" not in sim["b"]
