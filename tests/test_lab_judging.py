"""``lab.judging.judge_labelled_pairs``: the one engine call the Agreement page and ``berds agreement
--judge SPEC`` make to judge the labelled pairs (annotators' labels, adjudicated gold, reference labels)."""
import json

import numpy as np

from berds_core.cli import main
from berds_core.judges.base import Judge
from berds_core.lab.judging import judge_labelled_pairs, labelled_pair_ids
from berds_core.lab.store import Store
from berds_core.lab.tasks import import_pairs_tsv

PAIRS = ('question\tid\tdocument\tperspective\tlabel\n'
         'Is X good?\tp1\tX is great value.\tX is good.\t1\n'
         'Is X good?\tp2\tX wastes money.\tX is good.\t0\n'
         'Is X good?\tp3\tX wastes money.\tX is bad.\t1\n'
         'Is Y fair?\tp4\tNothing about it.\tY is fair.\t0\n'
         'Is Y fair?\tp5\tY treats all alike.\tY is fair.\t1\n')


class WordOverlap(Judge):
    """A judge whose probability is the share of the perspective's words found in the passage."""

    backend = "test"

    def __init__(self):
        super().__init__(threshold=0.5)
        self.seen: list[tuple[str, str]] = []

    def _name_stem(self) -> str:
        return "word-overlap"

    def _score(self, pairs):
        self.seen += list(pairs)
        return np.array([len(set(p.lower().split()) & set(d.lower().split())) / len(p.split()) for d, p in pairs])


def _store(tmp_path) -> Store:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(PAIRS, encoding="utf-8")
    store = Store(tmp_path / "lab.db", create=True)
    import_pairs_tsv(store, tsv, task_set="t", labels_as="ignore")
    return store


def test_every_kind_of_label_is_judged_once(tmp_path):
    with _store(tmp_path) as store:
        store.label("ann", "p1", 1)
        store.label("ann", "p2", "skip")  # a skip is no label
        store.adjudicate("p3", 1, "admin")
        store.set_reference_labels({"p4": 0})
        assert labelled_pair_ids(store) == ["p1", "p3", "p4"]
        judge = WordOverlap()
        done = judge_labelled_pairs(store, judge)
        assert done == {"judge": judge.name, "labelled": 3, "judged": 3}
        assert set(store.judge_preds(judge.name)) == {"p1", "p3", "p4"}
        preds = store.judge_preds(judge.name)
        assert preds["p1"][1] == 1 and abs(preds["p1"][0] - 2 / 3) < 1e-6  # "x", "is" of "X is good."
        assert preds["p3"][1] == 0 and abs(preds["p3"][0] - 1 / 3) < 1e-6  # "x" of "X is bad."
        # a new label: only that pair is judged; the others keep their stored verdicts
        store.label("ann", "p5", 1)
        again = judge_labelled_pairs(store, judge)
        assert again == {"judge": judge.name, "labelled": 4, "judged": 1}
        assert judge_labelled_pairs(store, judge)["judged"] == 0


def test_the_cli_judges_reference_labelled_pairs_too(tmp_path, capsys):
    """Before, ``berds agreement --judge`` judged annotators' labels and gold only, so a database whose
    pairs had reference labels got no verdicts from the CLI and different ones from the page."""
    with _store(tmp_path) as store:
        store.set_reference_labels({"p1": 1, "p2": 0, "p5": 1})
    assert main(["agreement", "--db", str(tmp_path / "lab.db"), "--judge", "embedded", "--n-boot", "50",
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["judge"].startswith("embedded-")
    assert rep["reference"]["n"] == 3
    with Store(tmp_path / "lab.db") as store:
        assert set(store.judge_preds(rep["judge"])) == {"p1", "p2", "p5"}
