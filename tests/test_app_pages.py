"""AppTest tests of the app shell, Home, Playground and Evaluate pages (no browser)."""
from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600  # a page run may wait for the one-off warm-up (minutes on a loaded 2-core machine)


@pytest.fixture(scope="session")
def entry(tmp_path_factory) -> str:
    """An entry script outside the repo that runs app.py.

    AppTest re-detects a ``pages/`` folder next to the entry script on every
    run and then re-runs the last page's file on its own (MPA v1), without
    app.py's sidebar; the real server switches to ``st.navigation`` for good.
    Running app.py from a folder without ``pages/`` gives AppTest the real
    behaviour: app.py (navigation + sidebar) runs on every rerun.
    """
    path = tmp_path_factory.mktemp("entry") / "app_entry.py"
    path.write_text(f"import runpy, sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    f"runpy.run_path({str(ROOT / 'app.py')!r}, run_name='__main__')\n")
    return str(path)


@pytest.fixture(autouse=True)
def _data_roots(tmp_path_factory, monkeypatch):
    """Files the tests type into the sidebar live under pytest's temp folder: an allowed root."""
    monkeypatch.setenv("BERDS_DATA_ROOTS", str(tmp_path_factory.getbasetemp()))


def shown(elements) -> list[str]:
    """What the page shows in error/info boxes: literal text (the app escapes it for Markdown)."""
    return [html.unescape(e.value) for e in elements]


def wait_warm(at: AppTest, timeout: float = TIMEOUT) -> AppTest:
    """Rerun until the background warm-up of the current configuration is over (models load off the page run)."""
    from berds_core.runtime.background import JOBS
    from studio_ui.config import config_key, current_config

    end = time.monotonic() + timeout
    while True:
        job = JOBS.get(("engine",) + config_key(at.session_state["config"]))
        if job is not None and job.over:
            break
        assert time.monotonic() < end, "warm-up did not finish"
        time.sleep(0.5)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture()
def _app(entry):
    def make() -> AppTest:
        at = AppTest.from_file(entry, default_timeout=TIMEOUT)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at
    return make


def _md(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _open(at: AppTest, page: str) -> AppTest:
    at.switch_page(str(ROOT / page))  # absolute: the entry script lives outside the repo
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def tricky_data(tmp_path_factory):
    """A questions file and a corpus whose passages contain HTML and Markdown."""
    d = tmp_path_factory.mktemp("tricky")
    questions = [{"id": "q1", "question": "Should schools ban homework?",
                  "perspectives": ["Homework should be banned because it harms sleep.",
                                   "Homework should stay because it builds practice."]}]
    passages = [
        {"id": "evil", "title": "<b>Bold title</b>",
         "text": "Homework harms sleep <script>alert('x')</script> and <b>should be banned</b> **now** [link](http://e.x)"},
        {"id": "p2", "title": "Practice", "text": "Homework builds practice and should stay in schools for pupils."},
        {"id": "p3", "title": "Sleep", "text": "Teenagers lose sleep over homework every night, studies say."},
        {"id": "p4", "title": "Other", "text": "The weather in spring is mild with occasional rain showers."},
        {"id": "p5", "title": "Ban", "text": "Several schools ban homework to protect family time and sleep."},
        {"id": "p6", "title": "Grades", "text": "Homework practice improves grades in mathematics, teachers report."},
    ]
    qf, cf = d / "questions.jsonl", d / "corpus.jsonl"
    qf.write_text("".join(json.dumps(q) + "\n" for q in questions))
    cf.write_text("".join(json.dumps(p) + "\n" for p in passages))
    return qf, cf


def _use_files(at: AppTest, qf, cf) -> AppTest:
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(qf)).run()
    at.selectbox(key="sb_corpus").set_value("File path").run()
    at.text_input(key="sb_corpus_path").set_value(str(cf)).run()
    return at


# ------------------------------------------------------------------ shared search

def test_shared_search_searches_once_and_matches_direct_search(tricky_data):
    from berds_core.corpora.memory import load_corpus
    from berds_core.retrieval import get_retriever
    from berds_core.retrieval.caching import SharedSearch

    _, cf = tricky_data
    direct = get_retriever("bm25", load_corpus(cf), progress=False)
    calls = []
    inner = get_retriever("bm25", load_corpus(cf), progress=False)
    search = inner.search
    inner.search = lambda qs, k: calls.append((list(qs), k)) or search(qs, k)
    shared = SharedSearch(inner, depth=100)
    for k in (3, 1, 6, 100):
        for q in ("homework sleep", "practice grades"):
            assert shared.search([q], k) == [[(int(r), float(s)) for r, s in direct.search([q], k)[0]]]
    # the corpus holds 6 passages: one search per query served every k
    assert calls == [(["homework sleep"], 100), (["practice grades"], 100)]
    assert shared.name == direct.name
    shared.clear()
    shared.search(["homework sleep", "homework sleep"], 2)
    assert calls[-1] == (["homework sleep"], 100)


# ------------------------------------------------------------------ home and shell

def test_home_shows_demo_counts_and_sidebar(_app):
    at = wait_warm(_app())
    assert at.title[0].value == "BERDS Studio"
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Questions"].replace(",", "")) >= 12
    assert int(metrics["Passages"].replace(",", "")) >= 400
    assert int(metrics["Gold-labelled pairs"].replace(",", "")) > 0
    assert at.selectbox(key="sb_dataset").value == "Built-in demo"
    assert at.radio(key="sb_retriever").value == "bm25"
    # the judge's status is shown, and the embedded judge works offline
    assert any("embedded" in s for s in shown(at.sidebar.success)), shown(at.sidebar.error)


def test_bad_path_is_one_error_line_not_a_traceback(_app, tmp_path):
    at = _app()
    missing = tmp_path / "nope.jsonl"
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(missing)).run()
    assert not at.exception
    errors = shown(at.error)
    assert len(errors) == 1 and str(missing) in errors[0] and "does not exist" in errors[0]
    assert "\n" not in errors[0]


def test_malformed_questions_file_names_line_and_field(_app, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Q?", "perspectives": ["a", "b"]}\n{"question": "R?"}\n')
    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(bad)).run()
    assert not at.exception
    (err,) = shown(at.error)
    assert f"{bad}:2" in err and "perspectives" in err


def test_uploaded_files_load_and_bad_upload_names_its_line(_app, tricky_data):
    qf, cf = tricky_data
    at = _app()
    at.selectbox(key="sb_dataset").set_value("Upload a file").run()
    at.file_uploader(key="sb_dataset_upload").upload("questions.jsonl", qf.read_bytes()).run()
    at.selectbox(key="sb_corpus").set_value("Upload a file").run()
    at.file_uploader(key="sb_corpus_upload").upload("corpus.jsonl", cf.read_bytes()).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Questions"] == "1" and metrics["Passages"] == "6"
    at.file_uploader(key="sb_dataset_upload").upload(
        "broken.jsonl", b'{"question": "Q?", "perspectives": ["a", "b"]}\n{"question": 3}\n').run()
    assert not at.exception
    (err,) = shown(at.error)
    assert err.startswith("uploaded broken.jsonl:2:") and "question" in err


def test_judge_status_says_why_not(_app):
    at = _app()
    at.selectbox(key="sb_judge").set_value("custom spec").run()
    at.text_input(key="sb_judge_spec").set_value("openai:some-model@http://127.0.0.1:9/v1").run()
    assert not at.exception
    errs = shown(at.sidebar.error)
    assert errs and "unreachable" in errs[0] and "127.0.0.1:9" in errs[0]
    at.text_input(key="sb_judge_spec").set_value("nonsense").run()
    errs = shown(at.sidebar.error)
    assert errs and "unknown judge" in errs[0]
    assert not at.exception


# ------------------------------------------------------------------ playground

@pytest.fixture()
def playground(_app):
    return _open(_app(), "pages/playground.py")


def test_preset_column_says_its_saved_pipeline(playground):
    """issue 37: the preset's caption is printed from its spec (the help of its switch too), never typed."""
    from berds_core.diversify import get_preset
    from studio_ui.text import esc

    at = playground
    at.toggle(key="pg_preset").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    md = _md(at)
    p = get_preset("diverse")
    assert "#### + Diverse preset" in md and esc(f"{p.describe('bm25')} ({p})") in md
    assert str(p) in at.toggle(key="pg_preset").help and p.describe() in at.toggle(key="pg_preset").help


def test_playground_four_columns_with_metrics_cards_and_chips(playground):
    at = playground
    md = _md(at)
    heads = [m.value for m in at.markdown if m.value.startswith("#### ")]
    assert heads == ["#### Plain retrieval", "#### + MMR", "#### + Query expansion", "#### + Re-ranker"]
    k = at.slider(key="pg_k").value
    assert md.count("MRecall@%d<b>" % k) == 4 and md.count("Precision@%d<b>" % k) == 4
    assert md.count('data-testid="passage-card"') == 4 * k
    m = len(re.findall(r'<span class="bc-tag">P\d+</span>', md.split("####")[0]))
    assert m >= 2  # the perspective legend
    # one chip per perspective on every card
    assert len(re.findall(r'class="bc-chip( yes| topical| unsure)?"', md)) == 4 * k * m
    # the demo question has gold labels, so they score by default (as on Evaluate): green = gold supports
    assert at.radio(key="pg_labels").value == "gold" and 'class="bc-chip topical"' not in md
    # scored by the default embedded judge (closeness, not stance): its positives are "close" (blue), never
    # green "supports"; a pair it cannot tell from its threshold is drawn "?" (unsure) under either label
    # policy: the default (threshold) counts it by the threshold's decision, as `berds evaluate` does, and
    # its chip says so; the confident policy never counts it; a caption says what the judge is and how well
    # it agrees with people
    at.radio(key="pg_labels").set_value("judge").run()
    assert at.radio(key="pg_policy").value == "threshold"
    md = _md(at)
    assert 'class="bc-chip yes"' not in md and 'class="bc-chip topical"' in md and 'class="bc-chip unsure"' in md
    assert re.search(r'class="bc-chip unsure" title="[^"]*unsure[^"]*the threshold policy counts it[^"]*">P\d+ \?', md)
    counted_threshold = sum(map(int, re.findall(r"MRecall@\d+<b>(\d)</b>", md)))
    at.radio(key="pg_policy").set_value("confident").run()
    md = _md(at)
    assert 'class="bc-chip yes"' not in md and 'class="bc-chip unsure"' in md
    assert re.search(r'class="bc-chip unsure" title="[^"]*unsure[^"]*; not counted[^"]*">P\d+ \?', md)
    assert "the threshold policy counts it" not in md
    assert sum(map(int, re.findall(r"MRecall@\d+<b>(\d)</b>", md))) <= counted_threshold
    assert any("how close a passage is" in c.value and "F1" in c.value for c in at.caption)
    # the demo has gold labels: chips carry them
    assert "gold yes" in md and "gold no" in md and "G✓" in md
    values = re.findall(r"MRecall@\d+<b>(\d)</b>", md)
    assert set(values) <= {"0", "1"}


def test_playground_k_and_mmr_toggle_rerun(playground):
    at = playground
    at.slider(key="pg_k").set_value(3).run()
    at.toggle(key="pg_mmr").set_value(False).run()
    assert not at.exception
    md = _md(at)
    heads = [m.value for m in at.markdown if m.value.startswith("#### ")]
    assert "#### + MMR" not in heads and len(heads) == 3
    assert md.count('data-testid="passage-card"') == 3 * 3
    at.toggle(key="pg_mmr").set_value(True).run()
    assert len([m for m in at.markdown if m.value.startswith("#### ")]) == 4


def test_playground_xquad_and_pm2_columns(playground):
    at = playground
    at.slider(key="pg_k").set_value(3).run()
    at.toggle(key="pg_xquad").set_value(True).run()
    at.toggle(key="pg_pm2").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    heads = [m.value for m in at.markdown if m.value.startswith("#### ")]
    assert heads[-2:] == ["#### + xQuAD", "#### + PM-2"] and len(heads) == 6
    assert not at.error, [e.value for e in at.error]
    assert _md(at).count('data-testid="passage-card"') == 6 * 3


def test_playground_reports_uncovered_perspectives(playground):
    at = playground
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.text_input(key="pg_text").set_value("Should homework be banned?").run()
    at.text_area(key="pg_persp").set_value(
        "Homework should be banned because it harms children's sleep and family time.\n"
        "Penguins ride jet skis to the moon every Tuesday.").run()
    assert not at.exception, [e.value for e in at.exception]
    md = _md(at)
    assert any("No column covers" in w.value for w in at.warning)
    miss = re.search(r'<span class="bc-tag">P2</span>Penguins[^<]*— <b>([^<]+)</b>', md)
    assert miss, md[-800:]
    assert re.fullmatch(r"first supported at rank \d+ of plain retrieval|"
                        r"not supported by any of the top \d+ passages of plain retrieval", miss.group(1))


def test_playground_escapes_passage_html(_app, tricky_data):
    qf, cf = tricky_data
    at = _use_files(_open(_app(), "pages/playground.py"), qf, cf)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    md = _md(at)
    assert 'data-testid="passage-card"' in md
    assert "<script>" not in md and "<b>Bold" not in md and "<b>should" not in md
    assert "&#60;script&#62;" in md and "&#60;b&#62;should be banned" in md
    assert "**now**" not in md and "&#42;&#42;now&#42;&#42;" in md


def test_playground_typed_question_with_own_perspectives(_app, tricky_data):
    qf, cf = tricky_data
    at = _use_files(_open(_app(), "pages/playground.py"), qf, cf)
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.text_input(key="pg_text").set_value("Is homework good for <i>pupils</i>?").run()
    at.text_area(key="pg_persp").set_value("Homework helps practice\nHomework harms sleep\nHomework is neutral").run()
    assert not at.exception, [e.value for e in at.exception]
    md = _md(at)
    assert "<i>pupils" not in md
    assert md.count('<span class="bc-tag">P3</span>') >= 1
    assert md.count('data-testid="passage-card"') > 0


# ------------------------------------------------------------------ evaluate

def test_evaluate_runs_tables_failures_and_downloads(_app):
    at = _open(_app(), "pages/evaluate.py")
    assert any("Run evaluation" == b.label for b in at.button)
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (table,) = at.dataframe
    df = table.value
    assert {"all questions", "macro"} <= set(df["subset"])
    for col in ("MRecall@5", "MRecall@10", "Precision@5", "Precision@10", "Precision@1", "α-nDCG@5", "α-nDCG@10",
                "ERR-IA@5", "ERR-IA@10", "P-IA@5", "P-IA@10", "StRecall@5", "StRecall@10"):
        assert col in df.columns
        mean, lo, hi = map(float, re.match(r"([\d.]+) \[([\d.]+), ([\d.]+)\]", df[col].iloc[-1]).groups())
        assert 0 <= lo <= mean <= hi <= 1
    subsets = ~df["subset"].isin(["all questions", "macro"])
    assert sum(df["n"][subsets]) == df["n"][df["subset"] == "macro"].iloc[0] == \
        df["n"][df["subset"] == "all questions"].iloc[0]
    assert any("Failure browser" in h.value for h in at.subheader)
    assert any("miss a perspective" in c.value for c in at.caption)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Download run (JSONL)", "Download table (CSV)"]
    assert len(at.get("plotly_chart")) == 1


def test_evaluate_results_cached_by_configuration(_app):
    at = _open(_app(), "pages/evaluate.py")
    at.button(key="ev_run").click().run()
    runs = at.session_state["eval_runs"]
    (key,) = list(runs)
    n = len(runs[key])
    assert n >= 12
    at.selectbox(key="ev_method").set_value("mmr").run()
    assert at.button(key="ev_run").disabled is False
    at.button(key="ev_run").click().run()
    assert len(at.session_state["eval_runs"]) == 2
    # back to the first configuration: nothing to run, the table is there at once
    at.selectbox(key="ev_method").set_value("none").run()
    assert at.button(key="ev_run").disabled is True
    assert sum("subset" in df.value.columns for df in at.dataframe) == 1  # the results table (+ the comparison's)
    assert len(at.session_state["eval_done"]) == 2


@pytest.mark.slow
def test_evaluate_compares_configurations_with_corrected_significance(_app):
    """Two configurations (plain, xQuAD) on the demo's gold labels: the comparison's p-values are
    berds_core.eval.significance on the per-question scores, and the chart's stars are its corrected p's."""
    from berds_core.eval.significance import compare, stars

    at = _open(_app(), "pages/evaluate.py")
    at.button(key="ev_run").click().run()
    at.selectbox(key="ev_method").set_value("xquad").run()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = at.session_state["eval_done"]
    base, other = list(done)
    at.multiselect(key="ev_compare").set_value([base, other]).run()
    at.selectbox(key="ev_baseline").set_value(base).run()
    assert not at.exception, [e.value for e in at.exception]
    sig_table = next(df.value for df in at.dataframe if "p (randomisation)" in df.value.columns)
    assert set(sig_table["configuration"]) == {other}
    assert list(sig_table["metric"]) == ["MRecall@5", "Precision@5", "α-nDCG@5", "StRecall@5"]
    expected = compare({c: {m: done[c]["per_q"][m] for m in ("mrecall@5", "precision@5", "alpha_ndcg@5",
                                                            "strecall@5")} for c in (base, other)},
                       baseline=base)  # pooled over questions, as the bars and `berds evaluate` are
    rows = expected["comparisons"][0]["metrics"]
    for (_, row), m in zip(sig_table.iterrows(), rows):
        assert row["p (randomisation)"] == pytest.approx(rows[m]["p_permutation"], abs=1e-4)
        assert row["p (holm)"] == pytest.approx(rows[m]["p"], abs=1e-4) and row[""] == stars(rows[m]["p"])
    chart = at.get("plotly_chart")[-1].proto.spec
    bars = json.loads(chart)["data"]
    assert [b["name"] for b in bars] == [base, other]
    assert bars[1]["text"] == [stars(rows[m]["p"]) for m in rows] and set(bars[0]["text"]) == {""}

    # judge labels: the ndeval measures are scored again on the shared pool of the two configurations
    from berds_core.eval.diversity import diversity_scores, subtopic_qrels

    at.radio(key="ev_labels").set_value("judge").run()          # xQuAD, judged: no new retrieval
    at.selectbox(key="ev_method").set_value("none").run()       # plain, judged
    judged = [c for c in at.session_state["eval_done"] if c.endswith("judge, threshold")]  # the default policy
    assert len(judged) == 2
    at.multiselect(key="ev_compare").set_value(judged).run()
    at.selectbox(key="ev_baseline").set_value(judged[0]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("shared pool" in c.value for c in at.caption)
    done = at.session_state["eval_done"]
    runs = {c: [at.session_state["eval_runs"][done[c]["key"]][q] for q in done[c]["ids"]] for c in judged}
    judge_name = done[judged[0]]["labels"]["judge"]
    qrels = subtopic_qrels(list(runs.values()), judge=judge_name)
    per_run = {c: {**{m: done[c]["per_q"][m] for m in ("mrecall@5", "precision@5")},
                   **{m: v for m, v in diversity_scores(runs[c], qrels, (5,)).items() if m in ("alpha_ndcg@5",
                                                                                             "strecall@5")}}
               for c in judged}
    expected = compare(per_run, baseline=judged[0])["comparisons"][0]["metrics"]  # pooled over questions
    sig_table = next(df.value for df in at.dataframe if "p (randomisation)" in df.value.columns)
    for (_, row), m in zip(sig_table.iterrows(), ("mrecall@5", "precision@5", "alpha_ndcg@5", "strecall@5")):
        assert row["p (randomisation)"] == pytest.approx(expected[m]["p_permutation"], abs=1e-4)
        assert row["difference [95% CI]"].startswith(f"{expected[m]['diff']:+.3f}")


# ------------------------------------------------------------------ one question, one answer (issue 54)

def _discover_on_page(at: AppTest, question: str) -> tuple[tuple, str]:
    at.text_input(key="pg_text").set_value(question).run()
    at.button(key="pg_discover").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state["pg_discover_msg"], at.session_state["pg_persp"] if "pg_persp" in at.session_state else ""


def test_discover_on_the_page_and_on_the_command_line_give_the_pools_answer(playground, tmp_path):
    """The Playground's Discover perspectives and `berds discover --pool demo` answer the same question with the
    same list, in the same order, with the same tags: the pool's own stances for a question it was written for,
    and nothing (said plainly) for a question it holds nothing on."""
    import subprocess
    import sys

    from berds_core.datasets.demo import demo_pool_path
    from berds_core.discovery.pool import claim_key, written_stances

    nuclear = "Is nuclear power a good solution to climate change?"
    off_topic = ["Is chess a sport?", "Should daylight saving time be abolished?"]
    claims = tmp_path / "claims.txt"
    claims.write_text("\n".join([nuclear, *off_topic]) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    r = subprocess.run([sys.executable, "-m", "berds_core", "discover", "--claims", str(claims), "--pool", "demo",
                        "--out", str(out), "--json", "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    cli = {x["claim"]: x["perspectives"] for x in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert cli[off_topic[0]] == [] and cli[off_topic[1]] == []
    written = {pid: stance for pid, (topic, stance) in written_stances(demo_pool_path()).items()
               if topic == claim_key(nuclear)}
    assert sorted(written.values()) == ["support"] * 3 + ["undermine"] * 3
    assert {p["pid"]: p["stance"] for p in cli[nuclear]} == written  # the pool's six, with the pool's tags
    info = json.loads(r.stdout)
    assert (info["support"], info["undermine"], info["claims_without"]) == (3, 3, 2)

    at = playground
    at.radio(key="pg_mode").set_value("Type my own").run()
    msg, box = _discover_on_page(at, nuclear)
    assert box.splitlines() == [f"[{p['stance']}] {p['text']}" for p in cli[nuclear]]
    assert msg == ("success", "6 perspectives discovered (3 support, 3 undermine); edit them before searching.")
    for question in off_topic:
        at.text_area(key="pg_persp").set_value("").run()
        msg, box = _discover_on_page(at, question)
        assert msg[0] == "warning" and "holds no perspective on this question's topic" in msg[1], msg
        assert box == ""


def test_a_typed_demo_question_is_ranked_in_its_own_pool_and_the_page_says_how_many_passages_it_searched(playground):
    """A typed question that is a demo question, with perspectives of one's own, retrieves from that question's
    pool of 40 (not the union of every demo pool), and a perspective nothing supports is "not supported by any of
    the top 40 passages": the number plain retrieval searched, not the retriever's default depth."""
    from berds_core import datasets

    bundle = datasets.load_demo()
    q = next(q for q in bundle.questions if q.id == "b-q04")
    pool_texts = {p.text for p in bundle.passages if p.id in set(bundle.pools[q.id])}
    at = playground
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.text_input(key="pg_text").set_value(q.question).run()
    at.text_area(key="pg_persp").set_value(
        "Homework should be abolished because it harms children's sleep and family time.\n"
        "Penguins ride jet skis to the moon every Tuesday.").run()
    assert not at.exception, [e.value for e in at.exception]
    md = _md(at)
    miss = re.search(r'<span class="bc-tag">P2</span>Penguins[^<]*— <b>([^<]+)</b>', md)
    assert miss, md[-800:]
    assert miss.group(1) == f"not supported by any of the top {len(pool_texts)} passages of plain retrieval"
    shown_texts = [html.unescape(t).strip().rstrip("…") for t in re.findall(r'<div class="bc-text">([^<]*)', md)]
    pool_texts = {" ".join(t.split()) for t in pool_texts}
    assert shown_texts and all(any(p.startswith(t) for p in pool_texts) for t in shown_texts), shown_texts


def test_evaluate_headline_is_the_mean_over_questions_that_berds_evaluate_gives(_app, tmp_path):
    """The page's headline row and chart are the per-question mean its caption defines, the figure `berds
    evaluate` prints for the same run and labels, not the mean of the subset means."""
    import subprocess
    import sys

    from berds_core.datasets.demo import demo_dir

    at = _open(_app(), "pages/evaluate.py")
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (label,) = at.session_state["eval_done"]
    done = at.session_state["eval_done"][label]
    assert done["labels"].keys() == {"gold"}
    df = next(d.value for d in at.dataframe if "subset" in d.value.columns)
    head = float(df["MRecall@5"][df["subset"] == "all questions"].iloc[0].split()[0])
    macro = float(df["MRecall@5"][df["subset"] == "macro"].iloc[0].split()[0])
    per_q = done["per_q"]["mrecall@5"]
    assert head == pytest.approx(sum(per_q) / len(per_q), abs=5e-4)
    run = tmp_path / "run.jsonl"
    store = at.session_state["eval_runs"][done["key"]]
    run.write_text("".join(json.dumps(store[q]) + "\n" for q in done["ids"]), encoding="utf-8")
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(f.read_text(encoding="utf-8") for f in sorted(demo_dir().glob("gold_*.jsonl"))),
                    encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "berds_core", "evaluate", "--run", str(run), "--gold", str(gold),
                        "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert head == pytest.approx(cli["at"]["5"]["mrecall"], abs=5e-4)
    assert macro == pytest.approx(cli["macro"]["5"]["mrecall"], abs=5e-4)
    chart = json.loads(at.get("plotly_chart")[-1].proto.spec)["data"][0]
    assert chart["y"][chart["x"].index("MRecall@5")] == pytest.approx(cli["at"]["5"]["mrecall"])


def test_the_playground_and_berds_judge_give_one_side_per_passage_the_same_labels(playground, tmp_path):
    """Issue 62: the Playground's chips and `berds judge` on a run of the same passages read one decision: a
    demo question of two opposite perspectives (⇄ on the page), no passage counted for both, the page's counted
    chips equal to the CLI's -preds pair for pair."""
    import subprocess
    import sys

    from berds_core import datasets
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever
    from berds_core.retrieval.caching import SharedSearch
    from berds_core.runs import question_entry, read_run, write_run
    from berds_core.studio.columns import Engine, column_pipeline, column_result

    b = datasets.load_demo()
    q = next(x for x in b.questions if x.id == "a-q03")
    assert len(q.perspectives) == 2
    at = playground
    at.selectbox(key="pg_qid").set_value(q.id).run()
    at.radio(key="pg_labels").set_value("judge").run()
    assert not at.exception, [e.value for e in at.exception]
    md = _md(at)
    assert md.count('data-testid="perspective-group"') == 2  # ⇄ beside each of the two
    first = md.split("#### Plain retrieval", 1)[1].split("####", 1)[0]
    cards = first.split('data-testid="passage-card"')[1:]
    chips = [re.findall(r'<span class="bc-chip[^"]*" title="([^"]*)">P(\d)', c) for c in cards]
    page = [[("(counted" in t or "the threshold policy counts it" in t) for t in (html.unescape(t) for t, _ in cs)]
            for cs in chips]
    assert page and all(len(row) == 2 for row in page)
    assert not any(a and b_ for a, b_ in page)  # one side per passage
    # the same ranking as a run file, judged by the CLI
    by_id = {p.id: p for p in b.passages}
    pool = corpus_from_passages([by_id[i] for i in b.pools[q.id]], f"demo:{q.id}")
    k = at.slider(key="pg_k").value
    assert at.session_state["config"].retriever == "bm25"  # the sidebar's default
    judge = get_judge("embedded")
    res = column_result(Engine(pool, SharedSearch(get_retriever("bm25", pool, progress=False)), judge), q,
                        column_pipeline("none"), k)
    assert [p["counted"] for p in res["passages"]] == page  # the page draws the engine's column
    hits = [(p["row"], p["score"]) for p in res["passages"]]
    run, out = tmp_path / "run.jsonl", tmp_path / "judged.jsonl"
    write_run(run, [question_entry(q, pool, hits)])
    r = subprocess.run([sys.executable, "-m", "berds_core", "judge", "--run", str(run), "--judge", "embedded",
                        "--out", str(out), "--json", "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    (line,) = read_run(out)
    assert line["perspective_groups"] == [[0, 1]]
    assert [c[judge.name + "-preds"] for c in line["ctxs"]] == page
