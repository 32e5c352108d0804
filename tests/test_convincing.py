"""Which side wins (ConflictingQA): win-rate arithmetic on hand-made outcome tables, pairings, the loader,
stances from gold labels, features, and the decision path on a tiny random model and a REAL localhost server."""
import json
import math

import numpy as np
import pytest

import answer_server
from berds_core.cli import main
from berds_core.convincing import (Paragraph, QuestionSet, comparisons, correlations, counterfactuals, decide,
                                   from_run, load_conflictingqa, pair_prompt, pairings, paragraph_features,
                                   position_bias, run_experiment, win_rates)
from berds_core.convincing import Experiment
from berds_core.errors import InputError


def outcome(q, first, second, fs, ss, p):
    return {"question_id": q, "first": first, "second": second, "first_side": fs, "second_side": ss, "p_yes": p}


def test_win_rates_by_hand_both_orders_ties_and_too_few_opponents():
    # Y1 meets N1..N5 in both orders; Y2 meets N1 and N2 only (2 opponents -> dropped at min 5)
    outs = []
    for j in range(1, 6):
        outs.append(outcome("q", "Y1", f"N{j}", "yes", "no", 0.9 if j <= 3 else 0.2))   # Y1 first
        outs.append(outcome("q", f"N{j}", "Y1", "no", "yes", 0.5 if j == 1 else 0.3))   # Y1 second (j=1: tie)
    outs.append(outcome("q", "Y2", "N1", "yes", "no", 0.8))
    outs.append(outcome("q", "N1", "Y2", "no", "yes", 0.1))
    outs.append(outcome("q", "Y2", "N2", "yes", "no", 0.6))
    outs.append(outcome("q", "N2", "Y2", "no", "yes", 0.7))
    wr = win_rates(outs, min_opponents=5, n_boot=200)
    # Y1 vs N1: (1 + 0.5)/2; N2, N3: (1 + 0)/2; N4, N5: (0 + 0)/2
    assert wr["paragraphs"]["Y1"]["win_rate"] == pytest.approx((0.75 + 0.5 + 0.5 + 0 + 0) / 5)
    assert wr["paragraphs"]["Y1"]["opponents"] == 5 and wr["paragraphs"]["Y1"]["comparisons"] == 10
    # every N has at most 2 opponents, Y2 has 2: all dropped and counted
    assert set(wr["paragraphs"]) == {"Y1"} and wr["dropped"] == 6
    assert wr["dropped_ids"] == ["N1", "N2", "N3", "N4", "N5", "Y2"]
    lo, hi = wr["paragraphs"]["Y1"]["lo"], wr["paragraphs"]["Y1"]["hi"]
    assert 0 <= lo <= wr["paragraphs"]["Y1"]["win_rate"] <= hi <= 1
    low = win_rates(outs, min_opponents=2, n_boot=10)["paragraphs"]
    assert low["Y2"]["win_rate"] == pytest.approx(((1 + 1) / 2 + (1 + 0) / 2) / 2)
    assert low["N1"]["win_rate"] == pytest.approx(((0 + 0.5) / 2 + (0 + 1) / 2) / 2)  # vs Y1 (tie), vs Y2
    # position bias: the first paragraph's win indicator over all 14 comparisons
    first = [1, 1, 1, 0, 0] + [0.5, 1, 1, 1, 1] + [1, 1, 1, 0]
    # Y1-first: wins j<=3; N-first vs Y1: p=0.5 tie, then p=0.3 -> "No" -> N (first) wins
    expected = (sum(first[:5][i] for i in range(5)) + 0.5 + 4 + 1 + 1 + 1 + 0) / 14
    pb = position_bias(outs, n_boot=50)
    assert pb["first_wins"] == pytest.approx(expected) and pb["n"] == 14
    assert pb["yes_rate"] == pytest.approx((3 + 0.5 + 1 + 1 + 1) / 14)


def sets_of(n_yes, n_no, qid="q1", question="Is X good?"):
    ps = [Paragraph(f"{qid}-y{i}", f"support text {i}", "yes") for i in range(n_yes)]
    ps += [Paragraph(f"{qid}-n{i}", f"oppose text {i}", "no") for i in range(n_no)]
    return QuestionSet(qid, question, ps)


def test_pairings_all_sampled_seeded_and_both_orders():
    qs = sets_of(3, 4)
    assert len(pairings(qs)) == 12
    s1 = pairings(qs, "sample", 5, seed=1)
    assert len(s1) == 5 and len(set(s1)) == 5 and s1 == pairings(qs, "sample", 5, seed=1)
    assert s1 != pairings(qs, "sample", 5, seed=2)
    comps = comparisons([qs, sets_of(1, 1, "q2")], "sample", 5, seed=1)
    assert len(comps) == 2 * (5 + 1)
    orders = {(c["first"], c["second"]) for c in comps}
    assert all((b, a) in orders for a, b in orders)  # every pair asked in both orders
    with pytest.raises(ValueError):
        pairings(qs, "some")


def test_conflictingqa_loader_jsonl_csv_parquet_and_refuses_pickles(tmp_path):
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"category": "health", "search_query": "Is coffee good for you?", "search_type": "question",
             "url": f"http://e.x/{i}", "title": f"T{i}", "text_window": f"Coffee text {i}.",
             "stance": "yes" if i % 2 else "no"} for i in range(4)]
    rows.append(dict(rows[0], search_query="Is tea good for you?", stance="Yes"))
    jl = tmp_path / "c.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cs = tmp_path / "c.csv"
    with cs.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    pqf = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows), str(pqf))
    loaded = [load_conflictingqa(p) for p in (jl, cs, pqf)]
    for sets in loaded:
        assert [s.question for s in sets] == ["Is coffee good for you?", "Is tea good for you?"]
        assert [p.side for p in sets[0].paragraphs] == ["no", "yes", "no", "yes"] and sets[1].paragraphs[0].side == "yes"
        assert sets[0].category == "health" and sets[0].paragraphs[1].title == "T1"
    pk = tmp_path / "c.pkl"
    pk.write_bytes(b"\x80\x04not really")
    with pytest.raises(InputError) as e:
        load_conflictingqa(pk)
    assert "\n" not in str(e.value) and "refused" in str(e.value) and "to_parquet" in str(e.value)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps(dict(rows[1], stance="maybe")) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'stance': expected yes or no, got 'maybe'"):
        load_conflictingqa(bad)
    nocol = tmp_path / "nocol.jsonl"
    nocol.write_text(json.dumps({k: v for k, v in rows[0].items() if k != "text_window"}) + "\n")
    with pytest.raises(InputError, match="field 'text_window': missing column"):
        load_conflictingqa(nocol)


def test_stances_from_gold_labels_and_the_leaning_sides():
    entry = {"id": "q", "question": "Should homework be banned?",
             "perspectives": ["Homework should be banned.", "Homework should not be banned."],
             "stances": ["oppose", "support"],  # the dataset says perspective 1 supports the question
             "ctxs": [{"id": f"p{i}", "title": "", "text": f"t{i}", "score": 5.0 - i} for i in range(4)]}
    gold = {"q": {"p0": {0}, "p1": {1}, "p2": {0, 1}}}  # p2 both sides, p3 none: no side
    (qs,), counts = from_run([entry], gold=gold)
    assert [(p.id, p.side) for p in qs.paragraphs] == [("p0", "no"), ("p1", "yes")]
    assert qs.paragraphs[0].score == 5.0 and qs.paragraphs[1].rank == 2
    assert counts == {"skipped_questions": 0, "passages_without_side": 2}
    three = dict(entry, id="r", perspectives=["a", "b", "c"], stances=None)
    assert from_run([three], gold=gold)[1]["skipped_questions"] == 1
    given = dict(entry, ctxs=[dict(c, stance=s) for c, s in zip(entry["ctxs"], ["yes", "no", "no", None])])
    (qs2,), _ = from_run([given])
    assert [p.side for p in qs2.paragraphs] == ["yes", "no", "no"]


@pytest.mark.slow
def test_features_match_the_libraries_and_spearman():
    import textstat
    from scipy.stats import spearmanr
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    q = "Is coffee good for your health?"
    ps = [Paragraph("a", "Coffee is good for your health, a large study found. Coffee drinkers live longer.", "yes",
                    score=3.0),
          Paragraph("b", "Terrible news: caffeine harms sleep and raises anxiety.", "no", score=2.0),
          Paragraph("c", "Health experts disagree about coffee.", "no", score=1.0)]
    f = paragraph_features([(q, p) for p in ps], with_similarity=True)
    assert f[0]["unigram_overlap"] == 1.0 and f[1]["unigram_overlap"] == 0.0
    assert f[0]["bigram_overlap"] == pytest.approx(2 / 2)  # (coffee, good), (good, health) after stop words
    assert f[0]["flesch_kincaid"] == textstat.flesch_kincaid_grade(ps[0].text)
    assert f[1]["sentiment"] == SentimentIntensityAnalyzer().polarity_scores(ps[1].text)["compound"] < 0
    assert f[2]["unique_tokens"] == 5.0 and f[0]["retriever_score"] == 3.0
    assert f[0]["similarity"] > f[1]["similarity"]
    win = [0.9, 0.2, 0.5]
    corr = correlations(f * 2, win * 2, n_boot=100)
    assert corr["retriever_score"]["rho"] == pytest.approx(spearmanr([3, 2, 1] * 2, win * 2).statistic)
    assert corr["perplexity"]["rho"] is None  # not computed without a model
    r = corr["similarity"]
    assert r["lo"] <= r["rho"] <= r["hi"] and r["n"] == 6


def test_decision_on_a_tiny_random_model_is_the_yes_no_softmax(tmp_path):
    import torch

    from berds_core.generators.hf import HFGenerator
    from tiny_models import make_tiny_causal_lm

    gen = HFGenerator(str(make_tiny_causal_lm(tmp_path, arch="mistral")), device="cpu")
    qs = sets_of(2, 2, question="Is free speech good ?")
    outs = decide(gen, comparisons([qs]))
    assert len(outs) == 8 and all(0 < o["p_yes"] < 1 for o in outs)
    o = outs[1]  # the no-paragraph first
    text = gen.render(pair_prompt(qs.question, "oppose text 0", "support text 0"))
    assert o["first"] == "q1-n0" and text.index("oppose text 0") < text.index("support text 0")
    ids = gen.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        lp = torch.log_softmax(gen.model(input_ids=ids).logits[0, -1], -1)
    yes, no = (torch.logsumexp(lp[gen.token_ids(w)], 0).item() for w in ("Yes", "No"))
    assert o["p_yes"] == pytest.approx(1 / (1 + math.exp(no - yes)), abs=1e-5)


def relevance_decides(text: str) -> bool:
    """The server's rule: the paragraph that says it is about the question wins, else the first one does."""
    p1 = next(ln for ln in text.splitlines() if ln.startswith("Paragraph 1:"))
    p2 = next(ln for ln in text.splitlines() if ln.startswith("Paragraph 2:"))
    about = [p for p in (p1, p2) if "about the question" in p]
    chosen = about[0] if len(about) == 1 else p1
    return "support" in chosen


@pytest.fixture
def server():
    srv = answer_server.start()
    srv.decide = relevance_decides
    srv.write = lambda text: "Rewritten: " + text.split("Paragraph: ", 1)[-1]
    yield srv
    answer_server.stop(srv)


def test_experiment_against_a_local_server_position_bias_and_counterfactuals(server):
    from berds_core.generators import get_generator

    gen = get_generator(f"openai:m@{server.url}", retries=0)
    sets = [sets_of(5, 5)]
    res = run_experiment(sets, gen, Experiment(edits=("prefix", "keywords", "stance"), edit_sample=2, n_boot=100,
                                               features=False))
    assert res["comparisons"] == 50 and res["paragraphs"] == 10 and res["dropped_paragraphs"] == 0
    assert res["position_bias"]["first_wins"] == 1.0  # this "model" always sides with paragraph 1
    assert all(r["win_rate"] == 0.5 for r in res["rows"])
    cf = res["counterfactuals"]
    assert cf["edits"]["control"]["delta"] == 0.0
    assert cf["edits"]["prefix"]["delta"] == pytest.approx(0.5)  # relevance wins every comparison
    assert cf["edits"]["keywords"]["delta"] == 0.0 and cf["edits"]["prefix"]["n"] == 2
    assert cf["edits"]["stance"]["delta"] == 0.0
    pid = next(iter(cf["texts"]))
    assert cf["texts"][pid]["control"].endswith(" Thanks for reading!")
    assert cf["texts"][pid]["prefix"].startswith("The following text is about the question: Is X good?. ")
    assert cf["texts"][pid]["keywords"].endswith(" x good.")
    assert cf["texts"][pid]["stance"].startswith("Rewritten: ")  # written by the server's generate
    asks = [r["body"] for r in server.requests if r["body"]["max_tokens"] == 1]
    assert all(b["logprobs"] and "Use only the information in the above text" in b["messages"][0]["content"]
               for b in asks)


def test_convincing_cli_on_a_conflictingqa_file(server, tmp_path, capsys):
    rows = [{"category": "c", "search_query": "Is X good?", "search_type": "q", "url": "u", "title": "t",
             "text_window": f"{'support' if i < 5 else 'oppose'} text {i}", "stance": "yes" if i < 5 else "no"}
            for i in range(10)]
    data = tmp_path / "cqa.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "conv.json"
    assert main(["convincing", "--data", str(data), "--model", f"openai:m@{server.url}", "--out", str(out),
                 "--json", "--quiet", "--edits", "prefix", "--edit-sample", "2", "--bootstrap", "50",
                 "--retries", "0"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["comparisons"] == 50 and res["position_bias"]["first_wins"] == 1.0
    assert res["edits"]["prefix"]["delta"] == pytest.approx(0.5)
    assert "similarity" in res["correlations"] or res["correlations"] == {}
    full = json.loads(out.read_text())
    assert len(full["rows"]) == 10 and len(full["outcomes"]) == 50 and "features" in full["rows"][0]
    assert main(["convincing", "--data", str(data), "--model", f"openai:m@{server.url}", "--out", str(out),
                 "--edits", "magic"]) == 2
    assert "unknown edit 'magic'" in capsys.readouterr().err
    pk = tmp_path / "cqa.pickle"
    pk.write_bytes(b"x")
    assert main(["convincing", "--data", str(pk), "--model", f"openai:m@{server.url}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pickle files are refused" in err


def test_convincing_cli_on_a_run_with_gold_labels(server, tmp_path, capsys):
    persp = ["X is good.", "X is not good."]
    ctxs = [{"id": f"p{i}", "title": "", "text": f"{'support' if i < 3 else 'oppose'} text {i}", "score": 9.0 - i}
            for i in range(7)]
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "q1", "question": "Is X good?", "perspectives": persp,
                               "stances": ["support", "oppose"], "ctxs": ctxs}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"question_id": "q1", "passage_id": f"p{i}", "perspective": 0 if i < 3 else 1})
                            + "\n" for i in range(6)))  # p6: no label -> no side
    out = tmp_path / "conv.json"
    assert main(["convincing", "--run", str(run), "--gold", str(gold), "--model", f"openai:m@{server.url}",
                 "--min-opponents", "3", "--edits", "none", "--no-features", "--out", str(out), "--json",
                 "--quiet", "--bootstrap", "20"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["comparisons"] == 3 * 3 * 2 and res["paragraphs"] == 6 and res["passages_without_side"] == 1
    assert res["by_side"] == {"yes": {"n": 3, "mean_win_rate": 0.5}, "no": {"n": 3, "mean_win_rate": 0.5}}
    rows = json.loads(out.read_text())["rows"]
    assert {r["id"]: r["score"] for r in rows}["p0"] == 9.0  # the retriever's score travels with the paragraph
    # no labels and no stance on the passages: one line saying what to give
    assert main(["convincing", "--run", str(run), "--model", f"openai:m@{server.url}", "--out", str(out)]) == 2
    assert "give --gold or --judge" in capsys.readouterr().err
