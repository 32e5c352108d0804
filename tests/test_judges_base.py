"""Judge interface: spec parsing, names, the SQLite cache, partial progress, judge_run, and the CLI verbs."""
import json

import numpy as np
import pytest

from berds_core.cli import main
from berds_core.cli.judge_cmd import agreement, table
from berds_core.datasets.human_pairs import read_pairs
from berds_core.errors import InputError
from berds_core.judges import Judge, JudgeError, get_judge, judge_run, parse_spec, prediction_cache


class WordOverlapJudge(Judge):
    """A deterministic judge for interface tests: share of perspective words found in the passage."""

    backend = "overlap"
    commit_every = 2

    def __init__(self, threshold=0.5, fail_on=None, tag="a"):
        super().__init__(threshold)
        self.fail_on, self.tag, self.scored = fail_on, tag, []

    def _name_stem(self):
        return f"overlap-{self.tag}"

    def _score(self, pairs):
        out = []
        for p, s in pairs:
            if self.fail_on and self.fail_on in p:
                raise JudgeError("boom: garbage answer")
            self.scored.append((p, s))
            words = set(s.lower().split())
            out.append(len(words & set(p.lower().split())) / max(1, len(words)))
        return np.array(out)


def test_parse_spec():
    assert parse_spec("embedded")[0] == "embedded"
    assert parse_spec("hf:org/m+org/lora") == ("hf", {"model": "org/m", "adapter": "org/lora"})
    assert parse_spec("hf:/x/y") == ("hf", {"model": "/x/y", "adapter": None})
    assert parse_spec("openai:gpt-4o@https://api.openai.com/v1") == (
        "openai", {"model": "gpt-4o", "base_url": "https://api.openai.com/v1"})
    assert parse_spec("openai:m@x@localhost:8000")[1]["model"] == "m@x"
    assert parse_spec("berds-evaluator") == ("hf", {"model": "mistralai/Mistral-7B-Instruct-v0.2",
                                                    "adapter": "timchen0618/Mistral_BERDS_evaluator"})
    assert parse_spec("berds-evaluator:http://127.0.0.1:8000") == (
        "openai", {"model": "berds-evaluator", "base_url": "http://127.0.0.1:8000"})
    for bad in ("nli", "hf:", "openai:gpt4", "openai:@http://x", "embedded:x"):
        with pytest.raises(ValueError):
            parse_spec(bad)
    with pytest.raises(ValueError) as e:
        get_judge("nli")
    assert "berds-evaluator" in str(e.value) and "embedded" in str(e.value)  # one error listing the choices


def test_berds_evaluator_preset_expands_to_the_papers_evaluator():
    j = get_judge("berds-evaluator")
    assert (j.backend, j.model_id, j.adapter_id) == ("hf", "mistralai/Mistral-7B-Instruct-v0.2",
                                                     "timchen0618/Mistral_BERDS_evaluator")
    assert j.prompt.name == "berds" and j.keep_system is False and j.decode == "logits" and j.shot == 0
    assert j.name == "hf-mistralai__Mistral-7B-Instruct-v0.2+timchen0618__Mistral_BERDS_evaluator-berds-nosys-0shot-t0.5"
    v = get_judge("berds-evaluator:http://127.0.0.1:8000", decode="generate")
    assert (v.backend, v.model_id, v.keep_system, v.decode) == ("openai", "berds-evaluator", False, "generate")
    assert v.name == "openai-berds-evaluator_127.0.0.1_8000_v1-berds-nosys-0shot-gen-t0.5"


def test_names_are_safe_and_carry_threshold():
    j = get_judge("openai:llama3.1:8b@http://localhost:11434/v1", threshold=0.3)
    assert j.name == "openai-llama3.1_8b_localhost_11434_v1-berds-0shot-t0.3"  # chat APIs keep the system turn
    assert get_judge("openai:mistral-7b@http://h:1").name == "openai-mistral-7b_h_1_v1-berds-nosys-0shot-t0.5"
    assert get_judge("openai:m@http://h:1", prompt="studio", shot=1).name == "openai-m_h_1_v1-studio-1shot-t0.5"
    names = {get_judge("openai:m@http://h:1", **o).cache_key for o in
             ({}, {"prompt": "studio"}, {"shot": 1}, {"decode": "generate"}, {"system": "drop"})}
    assert len(names) == 5  # prompt, shots, decoding and system turn never share cached predictions
    assert get_judge("openai:m@http://h:1", threshold=0.3).cache_key == get_judge("openai:m@http://h:1").cache_key


def test_cache_reuses_and_dedupes():
    j = WordOverlapJudge(tag="dedupe")
    pairs = [("the cat sat", "cat"), ("a dog", "cat"), ("the cat sat", "cat")]
    probs, labels = j.predict(pairs)
    assert probs.tolist() == [1.0, 0.0, 1.0] and labels.tolist() == [True, False, True]
    assert len(j.scored) == 2  # the duplicate pair is scored once
    j2 = WordOverlapJudge(tag="dedupe", threshold=0.0)
    probs2, labels2 = j2.predict(pairs)
    assert j2.scored == [] and j2.forward_calls == 0
    assert labels2.all()  # same cached probabilities, new threshold


def test_partial_progress_survives_a_failure():
    pairs = [(f"doc {i} cat", "cat") for i in range(5)] + [("GARBAGE", "cat")]
    j = WordOverlapJudge(tag="partial", fail_on="GARBAGE")
    with pytest.raises(JudgeError):
        j.predict(pairs)
    assert prediction_cache().count(j.cache_key) == 4  # two chunks of 2 committed before the failing chunk
    ok = WordOverlapJudge(tag="partial")
    ok.predict(pairs)
    assert [p for p, _ in ok.scored] == ["doc 4 cat", "GARBAGE"]


def _run(tmp_path):
    entries = [
        {"id": "q1", "question": "Cats?", "perspectives": ["cats are good", "cats are bad"],
         "ctxs": [{"id": "a", "title": "", "text": "cats are good pets", "score": 2.0},
                  {"id": "b", "title": "", "text": "dogs bark", "score": 1.0}]},
        {"id": "q2", "question": "Tea?", "perspectives": ["tea", "coffee", "water"],
         "ctxs": [{"id": "c", "title": "", "text": "drink water and tea", "score": 1.0}]},
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    return entries, path


def test_judge_run_adds_preds_and_probs(tmp_path):
    entries, _ = _run(tmp_path)
    j = WordOverlapJudge(tag="run", threshold=0.7)
    entries[0][j.name + "-preds"] = [[False, False], [False, False]]  # an old question-level verdict is replaced
    judge_run(entries, j, progress=False)
    # the BERDS layout: inside each passage, one value per perspective
    assert [c[j.name + "-preds"] for c in entries[0]["ctxs"]] == [[True, False], [False, False]]
    assert entries[1]["ctxs"][0][j.name + "-preds"] == [True, False, True]
    assert entries[0]["ctxs"][0][j.name + "-probs"] == pytest.approx([1.0, 2 / 3], abs=1e-4)
    assert j.name + "-preds" not in entries[0] and j.name + "-probs" not in entries[0]
    # the judge read the authors' document text: text + " " + title (the title key is present, empty)
    assert ("cats are good pets ", "cats are good") in j.scored


def test_passage_text_follows_the_authors_rule_except_for_the_embedded_judge():
    from berds_core.judges import passage_text
    from berds_core.records import Passage

    assert passage_text({"text": "T", "title": "Ti"}) == "T Ti"
    assert passage_text({"text": "T", "title": ""}) == "T "  # an empty title still adds the space
    assert passage_text({"text": "T"}) == "T"
    assert passage_text(Passage("p", "Ti", "T")) == "T Ti"
    assert passage_text({"text": "T", "title": "Ti"}, get_judge("embedded")) == "T"  # what dense retrieval embeds
    assert passage_text({"text": "T", "title": "Ti"}, WordOverlapJudge()) == "T Ti"


def test_cli_judge_writes_a_run_that_evaluates(tmp_path, capsys):
    from berds_core.runs import label_matrix, read_run

    _, path = _run(tmp_path)
    out = tmp_path / "judged.jsonl"
    assert main(["judge", "--run", str(path), "--judge", "embedded", "--out", str(out), "--json", "--quiet"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["pairs"] == 7 and res["questions"] == 2 and res["judge"].startswith("embedded-cos")
    entries = read_run(out)
    assert label_matrix(entries[0], judge=res["judge"]).shape == (2, 2)
    # re-judging is served from the cache
    from berds_core.judges import get_judge as gj

    j = gj("embedded")
    j.predict([(c["text"], p) for e in entries for c in e["ctxs"] for p in e["perspectives"]])
    assert j.forward_calls == 0


HEADER = "question\tid\tdocument\tperspective\tlabel\n"


def test_read_pairs_quoting_and_errors(tmp_path):
    f = tmp_path / "p.tsv"
    f.write_text(HEADER + 'Q\t1\t"a ""quoted""\ttab\tdoc"\tP\t1\n' + "Q\t2\tplain\tP\t0\n")
    rows = read_pairs(f)
    assert rows[0]["document"] == 'a "quoted"\ttab\tdoc' and rows[1]["label"] == "0"
    f.write_text(HEADER + "Q\t1\tdoc\tP\t1\nQ\t2\tdoc\tP\tyes\n")
    with pytest.raises(InputError) as e:
        read_pairs(f)
    assert e.value.line == 3 and e.value.field == "label"
    f.write_text(HEADER + "Q\t1\tdoc\tP\n")
    with pytest.raises(InputError) as e:
        read_pairs(f)
    assert e.value.line == 2 and "5 tab-separated fields" in str(e.value)
    f.write_text("question\tid\tdoc\tperspective\tlabel\n")
    with pytest.raises(InputError) as e:
        read_pairs(f)
    assert e.value.line == 1 and e.value.field == "document"
    f.write_text(HEADER + "Q\t1\t\tP\t1\n")
    with pytest.raises(InputError, match="field 'document'"):
        read_pairs(f)


def test_agreement_metrics():
    y = np.array([1, 1, 0, 0, 0, 0], bool)
    p = np.array([1, 0, 1, 0, 0, 0], bool)
    m = agreement(y, p)
    assert m["n"] == 6 and m["positive_rate"] == pytest.approx(2 / 6)
    assert m["accuracy"] == pytest.approx(4 / 6) and m["f1"] == pytest.approx(0.5)
    # kappa by hand: po = 4/6, pe = (2/6)(2/6) + (4/6)(4/6) = 20/36
    assert m["kappa"] == pytest.approx((4 / 6 - 20 / 36) / (1 - 20 / 36))
    assert "Pos. rate" in table([("j", m)]) and "50.0" in table([("j", m)])


def test_cli_judge_eval_table_json_and_out(tmp_path, capsys):
    f = tmp_path / "p.tsv"
    f.write_text(HEADER + "Q\t1\tNuclear power plants emit almost no carbon and we should build more.\t"
                 "Nuclear power should be expanded.\t1\n"
                 "Q\t2\tThe recipe needs two eggs and flour.\tNuclear power should be expanded.\t0\n")
    out = tmp_path / "preds.tsv"
    assert main(["judge-eval", "--pairs", str(f), "--json", "--quiet", "--out", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) >= {"n", "positive_rate", "accuracy", "f1", "kappa"} and res["n"] == 2
    rows = out.read_text().splitlines()
    assert rows[0].split("\t")[-2:] == ["probability", "prediction"] and len(rows) == 3
    assert rows[1].split("\t")[-1] in ("0", "1")
    assert main(["judge-eval", "--pairs", str(f), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "Pos. rate" in text and "Kappa" in text and "embedded-cos" in text


def test_cli_bad_input_exits_2(tmp_path, capsys):
    f = tmp_path / "p.tsv"
    f.write_text(HEADER + "Q\t1\tdoc\tP\tmaybe\n")
    assert main(["judge-eval", "--pairs", str(f), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "p.tsv:2: field 'label'" in err
    f.write_text(HEADER + "Q\t1\tdoc\tP\t1\n")
    assert main(["judge-eval", "--pairs", str(f), "--judge", "nli", "--quiet"]) == 2
    assert "unknown judge" in capsys.readouterr().err
    assert main(["judge-eval", "--pairs", str(tmp_path / "missing.tsv"), "--quiet"]) == 2
    assert "file not found" in capsys.readouterr().err
