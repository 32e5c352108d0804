"""A newcomer's first hour in the app (issue 18), in AppTest: paths, literal text, background
warm-up, Evaluate / Playground / Leaning details."""
from __future__ import annotations

import html
import json
import logging
import os
import re
import sys
import tempfile
import threading
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from test_app_pages import (ROOT, TIMEOUT, _app, _data_roots, _md, _open, entry, shown,  # noqa: E402,F401
                            wait_warm)

MARKDOWN = "root:x:0:0 **bold** [link](http://e.x) <b>tag</b> :red[red]"


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def everything(at: AppTest) -> str:
    """All text the page put in boxes, markdown, captions and titles (main and sidebar)."""
    parts = []
    for kind in ("error", "warning", "info", "success", "markdown", "caption", "title", "subheader", "exception"):
        parts += [str(getattr(e, "value", "")) for e in getattr(at, kind)]
    return "\n".join(parts)


def assert_literal(value: str, original: str) -> None:
    """``value`` shows ``original`` literally: no Markdown or HTML left to interpret, the same text unescaped."""
    for raw in ("**", "<b>", ":red[", "](", "root:x"):
        if raw in original:
            assert raw not in value, (raw, value)
    assert original in html.unescape(value), value


# ------------------------------------------------------------------ 3. paths outside the allowed roots

_OPENED: list[str] = []
_WATCH: list[str] = []


def _audit(event, args):
    if event == "open" and _WATCH and args and isinstance(args[0], (str, bytes, os.PathLike)):
        p = os.fsdecode(args[0])
        if any(p.startswith(w) for w in _WATCH):
            _OPENED.append(p)


sys.addaudithook(_audit)


@pytest.fixture()
def outside_file():
    """A file outside every allowed root; any attempt to open it is recorded."""
    d = tempfile.mkdtemp(prefix="berds-outside-")  # under /tmp, not under pytest's temp root
    secret = Path(d) / "secret.jsonl"
    secret.write_text("root:x:0:0:SECRET-CONTENT:/root:/bin/bash\n")
    _OPENED.clear()
    _WATCH[:] = [d]
    yield secret
    _WATCH.clear()
    secret.unlink()
    os.rmdir(d)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A small dataset inside the allowed roots: questions (one with Markdown in its text), corpus, gold."""
    d = tmp_path_factory.mktemp("small")
    q = write_jsonl(d / "questions.jsonl", [
        {"id": "q1", "question": f"Is {MARKDOWN} homework useful?",
         "perspectives": ["Homework builds practice.", "Homework steals sleep."]}])
    c = write_jsonl(d / "corpus.jsonl", [
        {"id": f"p{i}", "title": f"Passage {i} about homework", "text": f"Homework note {i}: pupils, schools and evenings."}
        for i in range(12)])
    g = write_jsonl(d / "gold.jsonl", [{"question_id": "q1", "passage_id": "not-in-corpus", "perspective": 0}])
    return q, c, g


@pytest.mark.parametrize("field", ["dataset", "gold", "corpus"])
def test_typed_paths_outside_the_allowed_roots_are_refused_unread(_app, small, outside_file, field):
    q, c, _ = small
    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(outside_file if field == "dataset" else q)).run()
    if field == "gold":
        at.text_input(key="sb_gold_path").set_value(str(outside_file)).run()
    if field == "corpus":
        at.selectbox(key="sb_corpus").set_value("File path").run()
        at.text_input(key="sb_corpus_path").set_value(str(outside_file)).run()
    assert not at.exception, [e.value for e in at.exception]
    (err,) = shown(at.error)
    what = {"dataset": "questions file", "gold": "gold labels file", "corpus": "corpus path"}[field]
    assert err.startswith(f"{what}: ") and "outside the folders this app may open" in err
    page = html.unescape(everything(at))
    assert "SECRET-CONTENT" not in page and "root:x:0" not in page
    assert _OPENED == []  # refused before anything was opened


def test_etc_passwd_is_refused_without_quoting_it(_app):
    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value("/etc/passwd").run()
    (err,) = shown(at.error)
    assert "outside the folders this app may open" in err
    assert "root:" not in html.unescape(everything(at))


def test_paths_inside_the_roots_still_load(_app, small):
    q, c, g = small
    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(q)).run()
    at.text_input(key="sb_gold_path").set_value(str(g)).run()
    at.selectbox(key="sb_corpus").set_value("File path").run()
    at.text_input(key="sb_corpus_path").set_value(str(c)).run()
    assert not at.error, shown(at.error)
    assert {m.label: m.value for m in at.metric}["Passages"] == "12"


# ------------------------------------------------------------------ 4. literal text, a test per place

def test_error_box_quoting_file_content_is_literal(_app, tmp_path):
    bad = write_jsonl(tmp_path / "dup.jsonl", [{"id": MARKDOWN, "question": "A?", "perspectives": ["x", "y"]},
                                               {"id": MARKDOWN, "question": "B?", "perspectives": ["x", "y"]}])
    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(bad)).run()
    (err,) = at.error
    assert_literal(err.value, MARKDOWN)
    assert "duplicate id" in html.unescape(err.value)


def test_sidebar_judge_spec_is_literal(_app):
    spec = "openai:**m**:x:<b>@http://127.0.0.1:9/v1"
    at = _app()
    at.selectbox(key="sb_judge").set_value("custom spec").run()
    at.text_input(key="sb_judge_spec").set_value(spec).run()
    (err,) = at.sidebar.error
    assert "**" not in err.value and ":x:" not in err.value and "<b>" not in err.value
    assert html.unescape(err.value).startswith(spec + ": ")


def test_home_caption_shows_names_literally(_app, tmp_path):
    q = write_jsonl(tmp_path / "**evil**_:x:.jsonl", [{"id": "a", "question": "A?", "perspectives": ["x", "y"]}])
    at = _app()
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(q)).run()
    at.selectbox(key="sb_judge").set_value("custom spec").run()
    at.text_input(key="sb_judge_spec").set_value("openai:**m**@http://127.0.0.1:9/v1").run()
    (cap,) = [c.value for c in at.caption if "Dataset:" in c.value]
    assert "**" not in cap and ":x:" not in cap
    assert "**evil**_:x:" in html.unescape(cap) and "openai:**m**@http://127.0.0.1:9/v1" in html.unescape(cap)


def _use(at, q, c, g=None):
    at.selectbox(key="sb_dataset").set_value("File path").run()
    at.text_input(key="sb_dataset_path").set_value(str(q)).run()
    if g is not None:
        at.text_input(key="sb_gold_path").set_value(str(g)).run()
    at.selectbox(key="sb_corpus").set_value("File path").run()
    at.text_input(key="sb_corpus_path").set_value(str(c)).run()
    return at


def test_evaluate_failure_titles_literal_and_no_interval_for_one_question(_app, small):
    q, c, g = small
    at = _open(_use(_app(), q, c, g), "pages/evaluate.py")
    assert at.radio(key="ev_labels").value == "gold"
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (exp,) = at.expander
    assert_literal(exp.label, f"Is {MARKDOWN} homework useful?")
    df = at.dataframe[0].value
    cells = [str(v) for col in df.columns[2:] for v in df[col]]
    assert all("[" not in c for c in cells)  # no [x, x] interval from one question
    # issue 24: one note under the table instead of the same words in every cell
    assert not any("too few" in c for c in cells)
    notes = [c.value for c in at.caption if "too few questions for an interval" in c.value]
    assert len(notes) == 1 and "n = 1" in notes[0]


# ------------------------------------------------------------------ 6. the first page view does not wait for models

def test_home_renders_while_models_load_in_the_background(_app, monkeypatch):
    import studio_ui.engines as engines
    import studio_ui.warmup as warmup
    from berds_core.runtime.background import Jobs, Memo

    monkeypatch.setattr(warmup, "JOBS", Jobs())
    monkeypatch.setattr(engines, "MEMO", Memo())
    release = threading.Event()
    original = warmup.cached_judge

    def slow_judge(spec):  # the warm-up's judge step waits until the test lets it go
        assert release.wait(TIMEOUT)
        return original(spec)

    monkeypatch.setattr(warmup, "cached_judge", slow_judge)
    try:
        at = _app()  # returns although the judge cannot load yet
        assert at.title[0].value == "BERDS Studio"
        assert {m.label for m in at.metric} >= {"Questions", "Passages"}
        (info,) = shown(at.sidebar.info)
        assert info == "embedded: loading in the background…"
        job = warmup.warmup_job(at.session_state["config"])
        while job.stage != "loading the judge":  # held there by the test
            assert not job.over, job.error
            threading.Event().wait(0.1)
        at.run()
        (bar,) = at.get("progress")
        assert html.unescape(bar.proto.text) == "Warm-up: loading the judge"
        assert job.status == "running" and shown(at.sidebar.info) == [info]
    finally:
        release.set()
    try:
        while job.stage in ("loading the dataset and corpus", "loading the judge") and not job.over:
            threading.Event().wait(0.1)
        assert job.status != "error", job.error
        at.run()  # the judge is loaded; the passages may still be encoding
        assert any(s.startswith("embedded: ") for s in shown(at.sidebar.success)), shown(at.sidebar.error)
        assert not at.sidebar.info
    finally:
        warmup.JOBS.shutdown()  # this test's own worker: stop it at its next step


def test_playground_answers_before_the_passages_are_encoded(_app, monkeypatch):
    """issue 24: a speaker who opens the Playground at once waits for the models, not for every passage to
    be encoded: the first question is drawn while the warm-up's encoding is held back (by the test here;
    by the page's foreground work in the app), and the warm-up then finishes."""
    import berds_core.studio.warmup as engine_warmup
    import studio_ui.engines as engines
    import studio_ui.warmup as warmup
    from berds_core.runtime.background import Jobs, Memo

    monkeypatch.setattr(warmup, "JOBS", Jobs())
    monkeypatch.setattr(engines, "MEMO", Memo())
    release, started = threading.Event(), threading.Event()
    original = engine_warmup.warm_passages

    def held_warm(*a, **k):  # the encoding step waits until the test lets it go
        started.set()
        assert release.wait(TIMEOUT)
        return original(*a, **k)

    monkeypatch.setattr("berds_core.studio.warmup.warm_passages", held_warm)
    try:
        at = _app()
        at = _open(at, "pages/playground.py")  # drawn while the encoding cannot finish
        job = warmup.warmup_job(at.session_state["config"])
        assert job.ready and not job.over
        assert _md(at).count('data-testid="passage-card"') == 4 * 5
        release.set()
        assert job.wait(TIMEOUT) and job.status == "done", job.error
        assert started.is_set(), job.stages
    finally:
        release.set()
        warmup.JOBS.shutdown()


@pytest.mark.slow
def test_dense_index_reports_encoding_progress(small):
    from berds_core.corpora.memory import load_corpus
    from berds_core.retrieval import get_retriever

    _, c, _ = small
    seen = []
    get_retriever("dense", load_corpus(c), progress=False, cache=False, on_progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (12, 12) and [d for d, _ in seen] == sorted(d for d, _ in seen)


# ------------------------------------------------------------------ 8. smaller things, on the demo

@pytest.fixture()
def warm(_app):
    return wait_warm(_app())


def test_playground_and_evaluate_default_to_the_same_labels(warm):
    at = _open(warm, "pages/playground.py")
    pg = at.radio(key="pg_labels").value
    at = _open(at, "pages/evaluate.py")
    assert pg == at.radio(key="ev_labels").value == "gold"


def test_gold_scoring_colours_the_chips_by_gold(warm):
    at = _open(warm, "pages/playground.py")
    at.radio(key="pg_labels").set_value("judge").run()
    judge_md = _md(at)
    at.radio(key="pg_labels").set_value("gold").run()
    md = _md(at)
    chips = re.findall(r'<span class="bc-chip( yes)?" title="[^"]*gold&#32;(yes|no)|'
                       r'<span class="(bc-chip(?: yes)?)" title="([^"]*)">P\d+ [\d.]+(<span class="g">G✓</span>)?', md)
    pairs = re.findall(r'<span class="(bc-chip(?: yes)?)" title="[^"]*">P\d+ [\d.]+(<span class="g">G✓</span>)?</span>',
                       md)
    assert pairs and chips
    for cls, gmark in pairs:  # green exactly where gold says "supports"
        assert (cls == "bc-chip yes") == bool(gmark)
    judge_pairs = re.findall(r'<span class="(bc-chip(?: yes| topical| unsure)?)" title="[^"]*">P\d+ (?:[\d.]+|\?)'
                             r'(<span class="g">G✓</span>)?</span>', judge_md)
    # the embedded judge reads closeness, not stance: never green "supports"
    assert judge_pairs and 'class="bc-chip yes"' not in judge_md
    assert any((cls == "bc-chip topical") != bool(g) for cls, g in judge_pairs)  # the judge disagrees somewhere


def test_typed_question_the_corpus_does_not_cover_gets_a_hint(warm):
    at = _open(warm, "pages/playground.py")
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.text_input(key="pg_text").set_value("Xyzzy plugh frobnicate quux?").run()
    at.text_area(key="pg_persp").set_value("Xyzzy is plugh.\nXyzzy is not plugh.").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(i.startswith("Nothing found") for i in shown(at.info)), shown(at.info)
    at.text_input(key="pg_text").set_value("Should homework be banned?").run()
    at.text_area(key="pg_persp").set_value("Homework should be banned.\nHomework should stay.").run()
    assert not any(i.startswith("Nothing") for i in shown(at.info))


def test_a_question_the_demo_does_not_cover_shows_nothing_covered(warm):
    """issue 37: typed against the demo corpus (no passage about cars), no column covers a perspective and no
    banner says every perspective is covered (the judge's unrelated passages scored 0.45-0.48 before)."""
    at = _open(warm, "pages/playground.py")
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.text_input(key="pg_text").set_value("Should cities ban cars from their centres?").run()
    at.text_area(key="pg_persp").set_value("[support] Car-free centres cut air pollution and make streets safer.\n"
                                           "[undermine] Banning cars hurts shops and people who depend on driving."
                                           ).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Every perspective is covered" in s.value for s in at.success)
    assert "MRecall@5<b>1</b>" not in _md(at)
    assert any("No column covers 2 perspective" in w.value for w in at.warning) or \
        any(i.startswith("Nothing relevant found") for i in shown(at.info)), [w.value for w in at.warning]


def test_comparison_selects_each_newly_finished_configuration(warm):
    at = _open(warm, "pages/evaluate.py")
    at.button(key="ev_run").click().run()
    first = list(at.session_state["eval_done"])
    assert at.multiselect(key="ev_compare").value == first
    at.selectbox(key="ev_method").set_value("mmr").run()
    at.button(key="ev_run").click().run()
    done = list(at.session_state["eval_done"])
    assert len(done) == 2 and at.multiselect(key="ev_compare").value == done
    assert not at.warning, shown(at.warning)


def test_a_cancelled_run_is_shown_as_partial(warm):
    at = _open(warm, "pages/evaluate.py")
    at.button(key="ev_run").click().run()
    assert any(h.value.startswith("Results · ") for h in at.subheader)
    runs = at.session_state["eval_runs"]
    (key,) = list(runs)
    for qid in list(runs[key])[5:]:  # what Cancel leaves: the questions done so far
        del runs[key][qid]
    at.session_state["eval_done"] = {}
    at.run()
    heads = [h.value for h in at.subheader]
    assert not any(h.startswith("Results · ") for h in heads), heads
    (part,) = [h for h in heads if h.startswith("Partial results · ")]
    assert part.endswith("· 5 of 14 questions")


# ------------------------------------------------------------------ 7 + 8. Leaning: Arrow-safe Δ, dropped questions, swap column

@pytest.fixture(scope="module")
def leaning_data(tmp_path_factory):
    """Two two-perspective questions and one with three; the supporting passage is found only when
    the query is the supporting perspective, so p = 0 for some query forms and p > 0 for others."""
    d = tmp_path_factory.mktemp("leaning")
    qs = [
        {"id": "h", "question": "Should schools ban homework?", "stances": ["support", "oppose"],
         "perspectives": ["Exhausted pupils lose precious sleep.", "Assignments build lasting discipline."]},
        {"id": "c", "question": "Should cities ban cars?", "stances": ["support", "oppose"],
         "perspectives": ["Cleaner air saves lungs.", "Deliveries and trades need vans."]},
        {"id": "t", "question": "Which energy source is best?",
         "perspectives": ["Solar.", "Wind.", "Nuclear."]},
    ]
    passages = [{"id": "hs", "title": "", "text": "Exhausted pupils lose precious sleep every night."},
                {"id": "cs", "title": "", "text": "Cleaner air saves lungs, doctors report."},
                {"id": "ho", "title": "", "text": "Assignments build lasting discipline in pupils."}]
    passages += [{"id": f"f{i}", "title": "", "text": f"Should schools ban homework? Should cities ban cars? "
                                                       f"Debate notes number {i}."} for i in range(8)]
    gold = [{"question_id": "h", "passage_id": "hs", "perspective": 0},
            {"question_id": "c", "passage_id": "cs", "perspective": 0},
            {"question_id": "h", "passage_id": "ho", "perspective": 1}]
    return (write_jsonl(d / "q.jsonl", qs), write_jsonl(d / "c.jsonl", passages), write_jsonl(d / "g.jsonl", gold))


def test_leaning_delta_is_arrow_safe_and_dropped_questions_are_counted(_app, leaning_data):
    q, c, g = leaning_data
    at = _use(_app(), q, c, g)
    at.selectbox(key="sb_judge").set_value("custom spec").run()
    spec = "openai:**m**@http://127.0.0.1:9/v1"  # a judge the label radio echoes
    at.text_input(key="sb_judge_spec").set_value(spec).run()
    fallbacks = []

    class Catch(logging.Handler):
        def emit(self, record):
            if "Arrow table was unsuccessful" in record.getMessage():
                fallbacks.append(record)

    log = logging.getLogger("streamlit.dataframe_util")
    handler, level = Catch(), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        at.switch_page(str(ROOT / "pages/leaning.py"))
        at.run()
        at.number_input(key="ln_k").set_value(2).run()
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    assert not at.exception, [e.value for e in at.exception]
    assert fallbacks == []  # every table converted to Arrow as it is
    syc = next(df.value for df in at.dataframe if "delta" in df.value.columns)
    assert syc["delta"].dtype.kind == "f"
    undefined = syc["p"] == 0
    assert undefined.any() and (~undefined).any()  # the mix that used to break the Arrow conversion
    assert syc["delta"][undefined].isna().all() and (syc["note"][undefined] == "Δ undefined (p = 0)").all()
    # the question with three perspectives is not silently dropped
    (cap,) = [x.value for x in at.caption if "are left out" in x.value]
    assert cap.startswith("2 of 3 questions are analysed here; 1 are left out (1 with 3 perspectives)")
    # the swap column comes first, so it is never scrolled out of view
    order = [list(e.proto.column_order) for e in at.dataframe if list(e.proto.column_order)]
    assert ["swap", "question", "supporting", "opposing", "decided by", "id"] in order
    # the judge spec in the label choice is literal
    opts = at.radio(key="ln_labels").options
    (judge_opt,) = [o for o in opts if "judge" in html.unescape(o)]
    assert "**" not in judge_opt and html.unescape(judge_opt) == f"judge ({spec})"


# ------------------------------------------------------------------ 4. literal text on the pages added since

SPEC = "openai:**m**:x:<b>@http://127.0.0.1:9/v1"  # a typed spec with Markdown and HTML; the server is down


def one_literal_error(at: AppTest, marker: str, original: str) -> None:
    """Exactly one error box holds ``marker``, and it shows ``original`` literally (no emoji code left either)."""
    assert not at.exception, [e.value for e in at.exception]
    errs = [e.value for e in at.error if marker in html.unescape(e.value)]
    assert len(errs) == 1, [e.value for e in at.error]
    assert_literal(errs[0], original)
    assert ":x:" not in errs[0]


@pytest.mark.slow
def test_answers_page_generator_error_is_literal(_app):
    at = _open(_app(), "pages/answers.py")
    at.text_input(key="ans_gen").set_value(SPEC).run()
    one_literal_error(at, "Generator: ", SPEC)


@pytest.mark.slow
def test_convincing_page_model_and_file_errors_are_literal(_app):
    at = _open(_app(), "pages/convincing.py")
    at.text_input(key="cv_model").set_value(SPEC).run()
    one_literal_error(at, "Model: ", SPEC)
    outside = "/etc/**evil**_:x:.jsonl"  # outside the allowed roots: refused, named literally
    at.radio(key="cv_source").set_value("ConflictingQA file").run()
    at.text_input(key="cv_cqa_path").set_value(outside).run()
    one_literal_error(at, "outside the folders", outside)


def test_web_search_spec_error_is_literal(_app, monkeypatch):
    monkeypatch.setenv("BERDS_SEARCH", "**nope**:x:<b>")
    at = _open(_app(), "pages/playground.py")
    at.radio(key="pg_mode").set_value("Type my own").run()
    at.text_input(key="pg_text").set_value("Should cities ban cars?").run()
    at.radio(key="pg_corpus_src").set_value("Web (live)").run()
    one_literal_error(at, "BERDS_SEARCH: ", "**nope**:x:<b>")
