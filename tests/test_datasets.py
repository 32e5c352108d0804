"""Dataset loaders: every format, id stability, gold labels, the demo, and bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from berds_core.datasets import (
    Bundle, claim_to_question, guess_format, load_debate_sites, load_demo, load_gold, load_hub,
    load_perspectrum, load_qe, load_questions, negate_claim, read_gold, validate_gold, write_gold,
)
from berds_core.datasets.bundle import read_passages_jsonl
from berds_core.errors import InputError
from berds_core.records import Passage, Question


def write_lines(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def expect_error(fn, *, line=None, field=None, contains=None) -> InputError:
    with pytest.raises(InputError) as info:
        fn()
    err = info.value
    if line is not None:
        assert err.line == line, str(err)
    if field is not None:
        assert err.field == field, str(err)
    if contains is not None:
        assert contains in str(err), str(err)
    assert "\n" not in str(err)
    return err


# ---------------------------------------------------------------- generic JSONL

def test_jsonl_questions(tmp_path):
    f = write_lines(tmp_path / "q.jsonl", [
        {"id": 7, "question": "Should  cities ban cars?", "perspectives": ["Yes, they should.", "No."],
         "subset": "kialo", "split": "dev", "stances": ["support", "oppose"],
         "generated_perspectives": ["g1", "g2"]},
        "",
        {"question": "Is coffee healthy?", "perspectives": ["It is.", "It is not.", "It depends."]},
    ])
    qs = load_questions(f)
    assert [q.id for q in qs][0] == "7"
    assert qs[0].question == "Should cities ban cars?"  # whitespace collapsed
    assert qs[0].subset == "kialo" and qs[0].split == "dev"
    assert qs[0].stances == ["support", "oppose"] and qs[0].generated_perspectives == ["g1", "g2"]
    assert qs[1].perspectives == ["It is.", "It is not.", "It depends."]
    assert qs[1].id.startswith("q-")
    # derived ids depend on the text, not the position
    g = write_lines(tmp_path / "g.jsonl", [{"question": "Is coffee healthy?", "perspectives": ["a"]}])
    assert load_questions(g)[0].id == qs[1].id
    # to_json round-trips through the loader
    h = write_lines(tmp_path / "h.jsonl", [q.to_json() for q in qs])
    assert load_questions(h) == qs


@pytest.mark.parametrize("rows,line,field,contains", [
    (['{"question": "a", "perspectives": ["x"]}', '{"question": "b", "perspectives": ["x"'], 2, None, "malformed JSON"),
    ([{"perspectives": ["x"]}], 1, "question", "missing"),
    ([{"question": 3, "perspectives": ["x"]}], 1, "question", "expected str"),
    ([{"question": "   ", "perspectives": ["x"]}], 1, "question", "empty"),
    ([{"question": "a"}], 1, "perspectives", "missing"),
    ([{"question": "a", "perspectives": "x"}], 1, "perspectives", "expected a list"),
    ([{"question": "a", "perspectives": []}], 1, "perspectives", "at least one perspective"),
    ([{"question": "a", "perspectives": ["x", 2]}], 1, "perspectives", "item 1"),
    ([{"question": "a", "perspectives": ["x", " "]}], 1, "perspectives", "blank"),
    ([{"id": "1", "question": "a", "perspectives": ["x"]}, {"id": 1, "question": "b", "perspectives": ["y"]}],
     2, "id", "duplicate id '1' (first at line 1)"),
    ([{"question": "a", "perspectives": ["x"]}, {"question": "a", "perspectives": ["y"]}], 2, "id", "duplicate"),
    ([{"question": "a", "perspectives": ["x", "y"], "stances": ["support"]}], 1, "stances", "2 stances"),
    ([{"question": "a", "perspectives": ["x"], "stances": ["pro"]}], 1, "stances", "'pro'"),
    ([{"id": [1], "question": "a", "perspectives": ["x"]}], 1, "id", "expected a string or integer"),
    ([{"question": "a", "perspectives": ["x"], "subset": 5}], 1, "subset", "expected str"),
    (["[1, 2]"], 1, None, "expected a JSON object"),
])
def test_jsonl_bad_input(tmp_path, rows, line, field, contains):
    f = write_lines(tmp_path / "bad.jsonl", rows)
    err = expect_error(lambda: load_questions(f), line=line, field=field, contains=contains)
    assert str(err).startswith(f"{f}:{line}:")


def test_empty_and_non_utf8_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    expect_error(lambda: load_questions(empty, "jsonl"), contains="no questions")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"question": "a", "perspectives": ["x"]}\n{"question": "caf\xe9", "perspectives": ["x"]}\n')
    expect_error(lambda: load_questions(latin, "jsonl"), line=2, contains="UTF-8")
    expect_error(lambda: load_questions(tmp_path / "nope.jsonl"), contains="not found")


# ---------------------------------------------------------------- CSV / TSV

def test_csv_and_tsv(tmp_path):
    f = tmp_path / "q.csv"
    f.write_text('id,question,perspectives,subset\n'
                 'a,"Should we, as a city, ban cars?","[""Yes."", ""No, never.""]",x\n'
                 '\n'
                 ',Is tea good?,It is | It is not |,\n', encoding="utf-8")
    qs = load_questions(f)
    assert qs[0].id == "a" and qs[0].question == "Should we, as a city, ban cars?"
    assert qs[0].perspectives == ["Yes.", "No, never."] and qs[0].subset == "x"
    assert qs[1].perspectives == ["It is", "It is not"] and qs[1].subset is None and qs[1].id.startswith("q-")
    t = tmp_path / "q.tsv"
    t.write_text("question\tperspectives\nIs tea good?\tYes|No\n", encoding="utf-8")
    assert load_questions(t)[0].perspectives == ["Yes", "No"]


@pytest.mark.parametrize("text,line,field,contains", [
    ("question,answers\nq,a\n", 1, "perspectives", "missing column"),
    ("question,perspectives\nq,a|b\n,a\n", 3, "question", "must not be empty"),
    ("question,perspectives\nq,\n", 2, "perspectives", "at least one perspective"),
    ("question,perspectives\nq, | \n", 2, "perspectives", "at least one perspective"),
    ('question,perspectives\nq,"[""a"", 1]"\n', 2, "perspectives", "item 1"),
    ('question,perspectives\nq,"[""a"""\n', 2, "perspectives", "malformed JSON"),
    ("question,perspectives\nq,a,extra\n", 2, None, "3 cells"),
    ("id,question,perspectives\n1,q,a\n1,r,b\n", 3, "id", "duplicate"),
    ("question,perspectives\n", None, None, "no questions"),
    ("", None, None, "empty"),
])
def test_csv_bad_input(tmp_path, text, line, field, contains):
    f = tmp_path / "bad.csv"
    f.write_text(text, encoding="utf-8")
    expect_error(lambda: load_questions(f), line=line, field=field, contains=contains)


# ---------------------------------------------------------------- BERDS query expansion

def qe_line(org_id, text, q="Is X good?", persp=("X is good.", "X is bad.")):
    return {"org_id": org_id, "id": 1, "org_q": q, "perspectives": list(persp), "perspective": "P",
            "text": text, "question": f"{q} {text}", "input": f"{q} {text}"}


def test_qe_groups_in_file_order(tmp_path):
    f = write_lines(tmp_path / "kialo_query_exp.dev.jsonl", [
        qe_line("5", "first"), qe_line("9", "other", q="Is Y good?", persp=("Y.",)),
        qe_line("5", "second"), qe_line(5, "third"),
    ])
    qs = load_questions(f)
    assert guess_format(f) == "qe"
    assert [q.id for q in qs] == ["kialo-5", "kialo-9"]
    assert qs[0].generated_perspectives == ["first", "second", "third"]
    assert qs[0].perspectives == ["X is good.", "X is bad."]
    assert (qs[0].subset, qs[0].split) == ("kialo", "dev")
    g = write_lines(tmp_path / "mine.jsonl", [qe_line("5", "a")])
    q = load_qe(g)[0]
    assert (q.id, q.subset, q.split) == ("5", None, None)


@pytest.mark.parametrize("rows,line,field", [
    ([qe_line("1", "a"), qe_line("1", "b", q="Other?")], 2, "org_q"),
    ([qe_line("1", "a"), qe_line("1", "b", persp=("only one",))], 2, "perspectives"),
    ([{**qe_line("1", "a"), "perspectives": []}], 1, "perspectives"),
    ([{k: v for k, v in qe_line("1", "a").items() if k != "org_id"} | {"org_q": "q"}], 1, "org_id"),
    ([qe_line("1", "a"), {**qe_line("2", "b"), "text": 3}], 2, "text"),
])
def test_qe_bad_input(tmp_path, rows, line, field):
    f = write_lines(tmp_path / "arguana.jsonl", rows)
    expect_error(lambda: load_qe(f), line=line, field=field)


# ---------------------------------------------------------------- Hugging Face datasets

def test_hub_save_to_disk_with_splits(tmp_path):
    import datasets

    dd = datasets.DatasetDict({
        "dev": datasets.Dataset.from_dict({
            "id": ["1", "2"], "question": ["Is A good?", "Is B good?"],
            "perspectives": [["A is good.", "A is bad."], ["B is good.", "B is bad.", "B is neutral."]]}),
        "test": datasets.Dataset.from_dict({
            "id": ["1"], "question": ["Is C good?"], "perspectives": [["C.", "Not C."]]}),
    })
    folder = tmp_path / "Arguana"
    dd.save_to_disk(str(folder))
    qs = load_hub(folder)
    assert [(q.id, q.split) for q in qs] == [("dev-1", "dev"), ("dev-2", "dev"), ("test-1", "test")]
    assert all(q.subset == "arguana" for q in qs)
    assert qs[1].perspectives == ["B is good.", "B is bad.", "B is neutral."]
    dev = load_hub(folder, split="dev")
    assert [q.id for q in dev] == ["1", "2"]
    assert load_questions(folder)[2].question == "Is C good?"
    expect_error(lambda: load_hub(folder, split="train"), field="split", contains="dev, test")


def test_hub_parquet_with_other_column_names(tmp_path):
    import datasets

    ds = datasets.Dataset.from_dict({
        "org_id": [10, 10, 11], "query": ["Is A good?", "Is A good?", "Is B good?"],
        "perspective": ["A is good.", "A is bad.", '["B1", "B2"]'],
        "generated_perspectives": [["g1", "g2"], ["g1", "g2"], []]})
    f = tmp_path / "kialo.parquet"
    ds.to_parquet(str(f))
    qs = load_hub(f)
    assert [q.id for q in qs] == ["10", "11"]
    assert qs[0].perspectives == ["A is good.", "A is bad."]  # one statement per row, merged
    assert qs[0].generated_perspectives == ["g1", "g2"]
    assert qs[1].perspectives == ["B1", "B2"] and qs[1].subset == "kialo"


def test_hub_missing_column_and_bad_rows(tmp_path):
    import datasets

    f = tmp_path / "x.parquet"
    datasets.Dataset.from_dict({"question": ["q"], "answer": ["a"]}).to_parquet(str(f))
    err = expect_error(lambda: load_hub(f), field="perspectives", contains="missing column")
    assert "question, answer" in str(err)
    g = tmp_path / "y.parquet"
    datasets.Dataset.from_dict({"question": ["q", "r"], "perspectives": [["a"], []]}).to_parquet(str(g))
    expect_error(lambda: load_hub(g), line="row 1", field="perspectives")


def test_hub_unreachable_is_input_error():
    # conftest sets HF_HUB_OFFLINE=1: the hub id cannot be fetched and says so in one line
    expect_error(lambda: load_hub("timchen0618/Arguana"), contains="cannot load dataset")


# ---------------------------------------------------------------- phrasing claims

@pytest.mark.parametrize("claim,question,negation", [
    ("Violent Video Games Contribute to Youth Violence", "Do violent video games contribute to youth violence?",
     "Violent video games do not contribute to youth violence."),
    ("Golf is a Sport", "Is golf a sport?", "Golf is not a sport."),
    ("Abortion should be legal", "Should abortion be legal?", "Abortion should not be legal."),
    ("Ronald Reagan was a good president", "Was Ronald Reagan a good president?", "Ronald Reagan was not a good president."),
    ("The D.A.R.E. program is good for America's kids (K-12) ", "Is the D.A.R.E. program good for America's kids (K-12)?",
     "The D.A.R.E. program is not good for America's kids (K-12)."),
    ("Lowering the corporate tax rate does create jobs", "Does lowering the corporate tax rate create jobs?",
     "Lowering the corporate tax rate does not create jobs."),
    ("Science can determine human values", "Can science determine human values?", "Science cannot determine human values."),
    ("A government has the obligation to act", "Does a government have the obligation to act?",
     "A government does not have the obligation to act."),
    ("Corporal punishment be used in K-12 schools.", "Should corporal punishment be used in K-12 schools?",
     "Corporal punishment should not be used in K-12 schools."),
    ("Ban junk food from schools", "Should we ban junk food from schools?", "We should not ban junk food from schools."),
    ("There should be no permanent members", "Should there be no permanent members?", "There should be some permanent members."),
    ("Accessing email hacking", "Is it true that accessing email hacking?", "It is not true that accessing email hacking."),
    ("Is golf a sport?", "Is golf a sport?", "No: Is golf a sport?"),
])
def test_claim_phrasing(claim, question, negation):
    assert claim_to_question(claim) == question
    assert negate_claim(claim) == negation


def test_phrasing_uses_context_for_names():
    # no context: a word followed by a lower-case one is taken as a common word
    assert claim_to_question("Britain should scrap the monarchy") == "Should britain scrap the monarchy?"
    # the context writes it capitalised in mid-sentence: a name
    assert claim_to_question("Britain should scrap the monarchy", "In 1950 Britain was poorer.") == \
        "Should Britain scrap the monarchy?"
    # capitalised only at sentence starts tells nothing either way
    assert claim_to_question("Golf is a sport", "Golf is old.\nGolf takes skill.") == "Is golf a sport?"
    assert claim_to_question("Homework should be banned", "Most homework is useless.") == "Should homework be banned?"


# ---------------------------------------------------------------- debate sites

def words(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def procon(claims) -> list[dict]:
    out = []
    for title, pro, con in claims:
        out.append({"url": "https://x.procon.org", "claim_title": title, "topic": "",
                    "perspectives_for": [{"perspective_title": t, "argument": {"description": d, "reference": []},
                                          "counter_argument": []} for t, d in pro],
                    "perspectives_against": [{"perspective_title": t, "argument": {"description": d, "reference": []},
                                              "counter_argument": []} for t, d in con]})
    return out


def debate_file(tmp_path, claims, name="procon.json") -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(procon(claims)), encoding="utf-8")
    return f


CLAIMS = [
    ("Golf is a Sport",
     [("Golf takes skill.", [" Golf needs ", " precision and practice. "]),
      ("Golf is in the Olympics.", [" ".join(words("olympic", 150))])],
     [("Golf is a game.", ["Golfers walk slowly.", ""]), ("Shared", ["Everyone agrees on this sentence."])]),
    ("Homework is beneficial",
     [("Practice helps.", ["Homework builds habits."]), ("Shared", ["Everyone agrees on this sentence."])],
     []),
]


def test_debate_sites_bundle(tmp_path):
    f = debate_file(tmp_path, CLAIMS)
    b = load_debate_sites(f)
    qs, passages, gold = b  # unpacks as the contract's triple
    assert isinstance(b, Bundle) and b.name == "procon"
    assert [q.question for q in qs] == ["Is golf a sport?", "Is homework beneficial?"]
    assert qs[0].perspectives == ["Golf is a Sport", "Golf is not a sport."]
    assert qs[0].stances == ["support", "oppose"] and qs[0].subset == "procon"
    by_text = {p.text: p for p in passages}
    assert "Golf needs precision and practice." in by_text
    assert by_text["Golf needs precision and practice."].title == "Golf takes skill."
    olympic = [p for p in passages if p.title == "Golf is in the Olympics."]
    assert [len(p.text.split()) for p in olympic] == [75, 75]  # 150 words -> two balanced passages <= 100
    assert " ".join(p.text for p in olympic) == " ".join(words("olympic", 150))
    assert len({p.id for p in passages}) == len(passages) == 6  # shared text is one passage
    g0 = gold[qs[0].id]
    assert g0[by_text["Golf needs precision and practice."].id] == {0}
    assert g0[by_text["Golfers walk slowly."].id] == {1}
    shared = by_text["Everyone agrees on this sentence."].id
    assert g0[shared] == {1} and gold[qs[1].id][shared] == {0}
    assert b.n_gold_pairs == 7
    validate_gold(gold, qs, passages, f)


def test_debate_sites_ids_are_stable(tmp_path):
    a = load_debate_sites(debate_file(tmp_path, CLAIMS, "a.json"))
    b = load_debate_sites(debate_file(tmp_path, list(reversed(CLAIMS)), "b.json"))
    assert {q.id: q.question for q in a.questions} == {q.id: q.question for q in b.questions}
    assert {p.id for p in a.passages} == {p.id for p in b.passages}
    assert a.gold == b.gold


def test_debate_sites_real_file_if_present():
    f = Path(__file__).resolve().parents[2] / "shared" / "data" / "debate-sites" / "procon.json"
    if not f.exists():
        pytest.skip("shared data not available")
    b = load_debate_sites(f)
    assert len(b.questions) == 50 and all(len(p.text.split()) <= 100 for p in b.passages)


@pytest.mark.parametrize("doc,where,field,contains", [
    ({"claim_title": "x"}, None, None, "expected a JSON array"),
    ([], None, None, "no claims"),
    ([procon(CLAIMS)[0], {"perspectives_for": [], "perspectives_against": []}], "entry 1", "claim_title", "missing"),
    ([procon(CLAIMS)[0], "oops"], "entry 1", None, "expected an object"),
    ([{**procon(CLAIMS)[0], "perspectives_for": {"a": 1}}], "entry 0", "perspectives_for", "expected a list"),
    ([{**procon(CLAIMS)[0], "perspectives_against": None}], "entry 0", "perspectives_against", "missing"),
    ([{**procon(CLAIMS)[0], "perspectives_for": [{"perspective_title": "t", "argument": {"description": [1]}}]}],
     "entry 0", "perspectives_for[0].argument.description", "list of strings"),
    ([{**procon(CLAIMS)[0], "perspectives_for": [{"perspective_title": "t"}]}],
     "entry 0", "perspectives_for[0].argument", "missing"),
    ([{**procon(CLAIMS)[0], "perspectives_for": [], "perspectives_against": []}],
     "entry 0", "perspectives_for", "no argument text"),
    ([procon(CLAIMS)[0], procon(CLAIMS)[0]], "entry 1", "claim_title", "first at entry 0"),
])
def test_debate_sites_bad_input(tmp_path, doc, where, field, contains):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    err = expect_error(lambda: load_debate_sites(f), line=where, field=field, contains=contains)
    if where:
        assert str(err).startswith(f"{f}:{where}:")


def test_debate_sites_malformed_json(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('[\n {"claim_title": "x",\n  "perspectives_for": [}\n]', encoding="utf-8")
    expect_error(lambda: load_debate_sites(f), line=3, contains="malformed JSON")
    f.write_text("")
    expect_error(lambda: load_debate_sites(f), contains="empty")


# ---------------------------------------------------------------- PERSPECTRUM

def perspectrum_files(tmp_path, claims=None, pool=None, split=True) -> Path:
    claims = claims if claims is not None else [
        {"cId": 1, "text": "Vaccination must be made compulsory", "source": "idebate", "perspectives": [
            {"pids": [10, 11], "stance_label_3": "SUPPORT", "stance_label_5": "SUPPORT", "voter_counts": [3, 0, 0, 0, 0], "evidence": []},
            {"pids": [12], "stance_label_3": "UNDERMINE", "stance_label_5": "UNDERMINE", "voter_counts": [0, 0, 0, 3, 0], "evidence": []}]},
        {"cId": 2, "text": "Golf is a sport", "source": "idebate", "perspectives": [
            {"pids": [13], "stance_label_3": "SUPPORT"}]},
    ]
    pool = pool if pool is not None else [{"pId": i, "text": f"Sentence {i}.", "source": "x"} for i in range(10, 14)]
    (tmp_path / "perspective_pool_v1.0.json").write_text(json.dumps(pool))
    if split:
        (tmp_path / "dataset_split_v1.0.json").write_text(json.dumps({"1": "train", "2": "dev", "3": "test"}))
    f = tmp_path / "perspectrum_with_answers_v1.0.train_dev.json"
    f.write_text(json.dumps(claims))
    return f


def test_perspectrum(tmp_path):
    f = perspectrum_files(tmp_path)
    assert guess_format(f) == "perspectrum"
    qs = load_questions(f)
    assert [q.id for q in qs] == ["perspectrum-1", "perspectrum-2"]
    assert qs[0].question == "Must vaccination be made compulsory?"
    assert qs[0].perspectives == ["Sentence 10.", "Sentence 12."]
    assert qs[0].stances == ["support", "oppose"]
    assert [q.split for q in qs] == ["train", "dev"] and qs[0].subset == "perspectrum"


def test_perspectrum_without_split_file(tmp_path):
    qs = load_perspectrum(perspectrum_files(tmp_path, split=False))
    assert [q.split for q in qs] == [None, None]


@pytest.mark.parametrize("claims,where,field,contains", [
    ([{"cId": 1, "text": "c", "perspectives": []}], "entry 0", "perspectives", "at least one perspective"),
    ([{"cId": 1, "text": "c"}], "entry 0", "perspectives", "missing"),
    ([{"cId": 1, "text": "c", "perspectives": [{"pids": [99]}]}], "entry 0", "perspectives[0].pids", "99"),
    ([{"cId": 1, "text": "c", "perspectives": [{"pids": []}]}], "entry 0", "perspectives[0].pids", "non-empty"),
    ([{"cId": 1, "text": "c", "perspectives": [{"pids": [10]}]}, {"text": "d", "perspectives": [{"pids": [10]}]}],
     "entry 1", "cId", "missing"),
    ([{"cId": 1, "text": "c", "perspectives": [{"pids": [10]}]}, {"cId": 1, "text": "d", "perspectives": [{"pids": [10]}]}],
     "entry 1", "cId", "duplicate"),
    ([], None, None, "no claims"),
])
def test_perspectrum_bad_input(tmp_path, claims, where, field, contains):
    f = perspectrum_files(tmp_path, claims=claims)
    expect_error(lambda: load_perspectrum(f), line=where, field=field, contains=contains)


def test_perspectrum_missing_pool(tmp_path):
    f = tmp_path / "claims.json"
    f.write_text(json.dumps([{"cId": 1, "text": "c", "perspectives": [{"pids": [1]}]}]))
    expect_error(lambda: load_perspectrum(f), contains="perspective pool")


# ---------------------------------------------------------------- gold

def test_gold_round_trip_and_validation(tmp_path):
    f = write_lines(tmp_path / "gold.jsonl", [
        {"question_id": "q1", "passage_id": "p1", "perspective": 0},
        {"question_id": "q1", "passage_id": "p1", "perspective": 1},
        {"question_id": 2, "passage_id": 5, "perspective": 1},
        {"question_id": "q1", "passage_id": "p1", "perspective": 0},
    ])
    gold = load_gold(f)
    assert gold == {"q1": {"p1": {0, 1}}, "2": {"5": {1}}}
    qs = [Question("q1", "Q?", ["a", "b"]), Question("2", "R?", ["a", "b"])]
    ps = [Passage("p1", "", "t"), Passage("5", "", "u")]
    validate_gold(gold, qs, ps, f)
    out = tmp_path / "out.jsonl"
    assert write_gold(out, gold, qs) == 3
    assert load_gold(out) == gold
    gold2, lines = read_gold(f)
    expect_error(lambda: validate_gold(gold2, qs[:1], ps, f, lines), line=3, field="question_id")
    expect_error(lambda: validate_gold(gold2, qs, ps[:1], f, lines), line=3, field="passage_id")
    expect_error(lambda: validate_gold(gold2, [qs[0], Question("2", "R?", ["a"])], ps, f, lines),
                 line=3, field="perspective", contains="out of range")


@pytest.mark.parametrize("row,field,contains", [
    ({"passage_id": "p", "perspective": 0}, "question_id", "missing"),
    ({"question_id": "q", "perspective": 0}, "passage_id", "missing"),
    ({"question_id": "q", "passage_id": "p"}, "perspective", "missing"),
    ({"question_id": "q", "passage_id": "p", "perspective": "0"}, "perspective", "int"),
    ({"question_id": "q", "passage_id": "p", "perspective": True}, "perspective", "int"),
    ({"question_id": "q", "passage_id": "p", "perspective": -1}, "perspective", ">= 0"),
    ({"question_id": ["q"], "passage_id": "p", "perspective": 0}, "question_id", "string or integer"),
])
def test_gold_bad_input(tmp_path, row, field, contains):
    f = write_lines(tmp_path / "gold.jsonl", [{"question_id": "q", "passage_id": "p", "perspective": 0}, row])
    expect_error(lambda: load_gold(f), line=2, field=field, contains=contains)


def test_gold_empty(tmp_path):
    f = tmp_path / "gold.jsonl"
    f.write_text("")
    expect_error(lambda: load_gold(f), contains="no gold labels")


# ---------------------------------------------------------------- demo bundle

def demo_folder(tmp_path, gold_rows=None, extra_corpus=None):
    d = tmp_path / "demo"
    d.mkdir()
    write_lines(d / "questions_a.jsonl", [{"id": "a1", "question": "Q1?", "perspectives": ["x", "y"]}])
    write_lines(d / "questions_b.jsonl", [{"id": "b1", "question": "Q2?", "perspectives": ["x", "y", "z"]}])
    write_lines(d / "corpus_a.jsonl", [{"id": "pa", "title": "T", "text": "alpha"}])
    write_lines(d / "corpus_b.jsonl", [{"id": "pb", "text": "beta"}] + (extra_corpus or []))
    write_lines(d / "gold_a.jsonl", gold_rows or [{"question_id": "a1", "passage_id": "pa", "perspective": 1}])
    write_lines(d / "gold_b.jsonl", [{"question_id": "b1", "passage_id": "pb", "perspective": 2}])
    return d


def test_demo_folder_merges_and_validates(tmp_path):
    b = load_demo(demo_folder(tmp_path))
    assert b.name == "demo" and [q.id for q in b.questions] == ["a1", "b1"]
    assert [p.id for p in b.passages] == ["pa", "pb"] and b.passages[1].title == ""
    assert b.gold == {"a1": {"pa": {1}}, "b1": {"pb": {2}}}


def test_demo_folder_bad(tmp_path):
    (tmp_path / "x").mkdir()
    d = demo_folder(tmp_path / "x", gold_rows=[{"question_id": "a1", "passage_id": "pb", "perspective": 2}])
    expect_error(lambda: load_demo(d), line=1, field="perspective", contains="out of range")
    (tmp_path / "y").mkdir()
    d = demo_folder(tmp_path / "y", extra_corpus=[{"id": "pa", "text": "again"}])
    err = expect_error(lambda: load_demo(d), line=2, field="id", contains="duplicate passage id 'pa'")
    assert "corpus_a.jsonl:1" in str(err)
    (tmp_path / "z").mkdir()
    expect_error(lambda: load_demo(tmp_path / "z"), contains="demo data missing")
    f = write_lines(tmp_path / "c.jsonl", [{"id": "1", "text": " "}])
    expect_error(lambda: read_passages_jsonl(f), line=1, field="text")


def test_real_demo_bundle():
    """The shipped demo: >= 12 questions with 2-4 perspectives, >= 400 passages, gold labels."""
    b = load_demo()
    assert len(b.questions) >= 12
    assert all(2 <= len(q.perspectives) <= 4 for q in b.questions)
    assert len(b.passages) >= 400
    assert b.n_gold_pairs > 0
    labelled = {qid for qid, by_p in b.gold.items() if by_p}
    assert labelled == {q.id for q in b.questions}  # every question has gold labels


# ---------------------------------------------------------------- format guessing

def test_guess_format(tmp_path):
    j = write_lines(tmp_path / "q.jsonl", [{"question": "a", "perspectives": ["x"]}])
    assert guess_format(j) == "jsonl"
    assert guess_format(debate_file(tmp_path, CLAIMS)) == "debate-sites"
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    expect_error(lambda: load_questions(other), contains="unrecognised JSON")
    assert guess_format("timchen0618/Kialo") == "hub"
    expect_error(lambda: load_questions(j, fmt="xml"), field="format")
    assert len(load_questions(debate_file(tmp_path, CLAIMS, "d.json"))) == 2


def test_perspectrum_bundle_is_two_sided_gold_without_test_split(tmp_path):
    from berds_core.datasets import load_perspectrum_bundle

    claims = [
        {"cId": 1, "text": "Vaccination must be made compulsory", "perspectives": [
            {"pids": [10, 11], "stance_label_3": "SUPPORT"}, {"pids": [12], "stance_label_3": "UNDERMINE"}]},
        {"cId": 2, "text": "Golf is a sport", "perspectives": [{"pids": [13, 10], "stance_label_3": "UNDERMINE"}]},
        {"cId": 3, "text": "Zoos should be banned", "perspectives": [{"pids": [14], "stance_label_3": "SUPPORT"}]},
    ]
    pool = [{"pId": i, "text": f"Sentence {i}."} for i in range(10, 15)]
    b = load_perspectrum_bundle(perspectrum_files(tmp_path, claims=claims, pool=pool))
    assert [q.id for q in b.questions] == ["perspectrum-1", "perspectrum-2"]  # claim 3 is in the test split
    q = b.questions[0]
    assert q.question == "Must vaccination be made compulsory?" and q.stances == ["support", "oppose"]
    assert q.perspectives == ["Vaccination must be made compulsory", "Vaccination must not be made compulsory."]
    assert {p.id for p in b.passages} == {"perspectrum-s10", "perspectrum-s11", "perspectrum-s12", "perspectrum-s13"}
    assert "Sentence 14." not in {p.text for p in b.passages}  # the test claim's sentences are never read in
    assert b.gold["perspectrum-1"] == {"perspectrum-s10": {0}, "perspectrum-s11": {0}, "perspectrum-s12": {1}}
    assert b.gold["perspectrum-2"] == {"perspectrum-s13": {1}, "perspectrum-s10": {1}}  # shared sentence
    assert all(p.title == "" for p in b.passages)
    with pytest.raises(InputError, match="no claims of split"):
        load_perspectrum_bundle(perspectrum_files(tmp_path, claims=claims[2:], pool=pool))
