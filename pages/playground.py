"""Playground: one question, plain retrieval next to MMR, query expansion and the re-ranker."""
from __future__ import annotations

import os
import re
from pathlib import Path

import streamlit as st

from berds_core.errors import InputError
from berds_core.judges import describe_judge
from berds_core.records import Question
from berds_core.diversify import get_preset
from berds_core.diversify.methods import HEADINGS, METHOD_TABLE, slider_lambda
from berds_core.retrieval import retriever_traits
from berds_core.studio.columns import QE_LABELS, Engine, best_ranks, column_pipeline, column_result, question_groups
from studio_ui.config import Config, choose_policy, LABEL_SOURCES
from studio_ui.engines import cached_data, question_engine
from studio_ui.shell import ensure_shell
from studio_ui.text import esc, judge_caveat, show_error
from studio_ui.warmup import foreground, page_engine
from studio_ui import web_live

ensure_shell()

COLUMNS = HEADINGS  # each method's column heading: the registry's (diversify.methods.METHOD_TABLE)
ON = {m.name: m.shown for m in METHOD_TABLE}  # a column shown before its toggle is touched: the registry's

CSS = """
<style>
.bc-card{border:1px solid #dfe3e8;border-radius:10px;padding:10px 12px;margin:0 0 10px 0;background:#fff}
.bc-head{display:flex;gap:6px;align-items:baseline;font-size:0.82rem;color:#5b6470;margin-bottom:4px}
.bc-rank{font-weight:700;color:#1f5f8b;font-size:0.95rem;flex:none}
.bc-title{font-weight:600;color:#1b1f24;flex:1 1 auto;min-width:0;overflow-wrap:anywhere;line-height:1.25}
.bc-score{flex:none;white-space:nowrap;font-variant-numeric:tabular-nums}
.bc-text{font-size:0.88rem;line-height:1.35;color:#1b1f24}
.bc-text details summary{cursor:pointer;color:#1f5f8b;font-size:0.8rem}
.bc-chips{margin-top:6px;display:flex;flex-wrap:wrap;gap:4px}
.bc-chip{font-size:0.75rem;border-radius:999px;padding:1px 8px;border:1px solid #cfd6de;background:#f3f5f8;color:#3b434c}
.bc-chip.yes{background:#dff3e4;border-color:#58b26d;color:#1d5b2c;font-weight:600}
.bc-chip.topical{background:#e3eefb;border-color:#6f9bd1;color:#1f4b7a;font-weight:600}
.bc-chip.unsure{background:#fff6e0;border-color:#d9a93a;color:#6b4e00;border-style:dashed}
.bc-chip .g{margin-left:4px;font-weight:700}
.bc-desc{font-size:0.8rem;color:#5b6470;line-height:1.25;margin:-4px 0 10px 0}
.bc-metrics{display:flex;gap:16px;margin:0 0 8px 0}
/* side by side, the column titles take two lines' height, bottom-aligned: a title that wraps ("+ Query expansion" in
   a narrow column) does not push its figures below the others' */
@media (min-width: 640px){[data-testid="stColumn"] h4{box-sizing:content-box;min-height:2.5em;line-height:1.25;display:flex;align-items:flex-end}}
.bc-metric{font-size:0.8rem;color:#5b6470}
.bc-metric b{display:block;font-size:1.45rem;color:#1b1f24}
.bc-persp{font-size:0.9rem;margin:2px 0}
.bc-tag{display:inline-block;min-width:28px;text-align:center;border-radius:6px;background:#1f5f8b;color:#fff;
        font-size:0.75rem;font-weight:700;margin-right:6px;padding:1px 4px}
.bc-miss{font-size:0.9rem;margin:2px 0}
.bc-stance{font-size:0.72rem;color:#5b6470;border:1px solid #cfd6de;border-radius:6px;padding:0 5px;margin-right:6px}
.bc-pair{font-size:0.72rem;color:#5b6470;border:1px dashed #cfd6de;border-radius:6px;padding:0 5px;margin-left:6px;white-space:nowrap}
/* a switch's label wraps between words on a narrow screen instead of ending in an ellipsis ("Perspective re-r...") */
[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] div,[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] p{white-space:normal;overflow:visible;text-overflow:clip;overflow-wrap:normal;word-break:normal;line-height:1.2}
</style>
"""


def _question_key(q: Question) -> tuple:
    return (q.id, q.question, tuple(q.perspectives), tuple(q.generated_perspectives or ()), q.subset,
            None if q.stances is None else tuple(q.stances))


def _question_from_key(key: tuple) -> Question:
    qid, text, persp, gen, subset, stances = key
    return Question(qid, text, list(persp), subset=subset, generated_perspectives=list(gen),
                    stances=None if stances is None else list(stances))


def _engine(cfg_key: tuple, qid: str, pipeline: str | None = None, pool_id: str | None = None
            ) -> tuple[Config, object, Engine]:
    """The config, the data and the engine one question is ranked with (``question_engine``): the question's own
    pool (the built-in demo, as BERDS's web setting; ``pool_id``: the dataset question a typed question is, when
    it has its own perspectives) or the dataset's corpus; a pipeline that names its retriever (the preset) runs
    on it."""
    cfg = Config(**dict(cfg_key))
    data = cached_data(cfg_key, cfg)
    return cfg, data, question_engine(cfg, data.corpus_for(pool_id or qid), pipeline)


@st.cache_data(show_spinner=False, max_entries=512)
def cached_column(cfg_key: tuple, qkey: tuple, spec: str, label: str, k: int, use_gold: bool, policy: str,
                  pool_id: str | None = None) -> dict:
    """One column: the pipeline ``spec`` (its string: the cache's key) ranked and judged for the question."""
    q = _question_from_key(qkey)
    cfg, data, engine = _engine(cfg_key, q.id, spec, pool_id)
    gold = data.gold if q.id in (data.gold or {}) else None
    return column_result(engine, q, spec, k, gold=gold, use_gold=use_gold, label=label, policy=policy)


@st.cache_data(show_spinner=False, max_entries=512)
def cached_best_ranks(cfg_key: tuple, qkey: tuple, which: tuple, use_gold: bool, policy: str,
                      pool_id: str | None = None) -> dict:
    q = _question_from_key(qkey)
    cfg, data, engine = _engine(cfg_key, q.id, pool_id=pool_id)
    gold = data.gold if q.id in (data.gold or {}) else None
    return best_ranks(engine, q, list(which), gold=gold, use_gold=use_gold, policy=policy)


POOL_ENV = "BERDS_PERSPECTIVE_POOL"  # the operator's default perspective pool (a file under BERDS_DATA_ROOTS)
POOL_DEMO, POOL_PATH, POOL_UPLOAD = "Built-in demo pool", "File path", "Upload a file"
STANCE_TAG = re.compile(r"^\s*\[(support|undermine|oppose|for|against)\]\s*", re.I)


@st.cache_resource(show_spinner=False, max_entries=2)
def cached_discoverer(pool_key: tuple):
    """One Discoverer per pool file (path, size, mtime): indexes load once per process."""
    from berds_core.discovery import Discoverer, open_pool

    return Discoverer(open_pool(pool_key[0]))


def parse_perspectives(text: str) -> tuple[list[str], list[str | None]]:
    """Lines of the perspectives box -> (statements, stances); ``[support]`` / ``[undermine]`` tags are optional."""
    persp, stances = [], []
    for line in text.splitlines():
        m = STANCE_TAG.match(line)
        body = line[m.end():].strip() if m else line.strip()
        if body:
            persp.append(body)
            tag = m.group(1).lower() if m else None
            stances.append(None if tag is None else "support" if tag in ("support", "for") else "oppose")
    return persp, stances


def discover_into_box() -> None:
    """Button callback: fill the perspectives box from the pool (runs before the page, so the box can change)."""
    from berds_core.files.safepaths import resolve_user_path

    ss = st.session_state
    ss.pop("pg_discover_msg", None)
    question = (ss.get("pg_text") or "").strip()
    if not question:
        ss["pg_discover_msg"] = ("warning", "Type a question first.")
        return
    try:
        src = ss.get("pg_pool_src", POOL_DEMO)
        upload = ss.get("pg_pool_upload")
        if src == POOL_DEMO:
            from berds_core.datasets.demo import demo_pool_path

            path = demo_pool_path()
        elif src == POOL_UPLOAD:
            if upload is None:
                ss["pg_discover_msg"] = ("warning", "Upload a pool file first (or choose the built-in demo pool).")
                return
            from studio_ui.sidebar import save_upload

            path = Path(save_upload(upload, "pool"))
        else:
            path = resolve_user_path(ss.get("pg_pool", ""), what="perspective pool")
        stat = path.stat()
        disc = cached_discoverer((str(path), stat.st_size, stat.st_mtime_ns))
        found = disc.answer(question)  # what `berds discover` answers for it
    except InputError as e:
        shown = ss.get(f"_upload_name_{e.path}")
        ss["pg_discover_msg"] = ("error", str(InputError(f"uploaded {shown}", e.line, e.field, e.message)
                                              if shown else e))
        return
    except Exception as e:  # a model that cannot load must not take the page down
        ss["pg_discover_msg"] = ("error", f"Discovery failed: {type(e).__name__}: {e}".splitlines()[0])
        return
    if not found:
        ss["pg_discover_msg"] = ("warning", f"The pool holds no perspective on this question's topic (none of its "
                                            f"{len(disc.index):,} sentences is relevant to it).")
        return
    ss["pg_persp"] = "\n".join(f"[{p['stance']}] {p['text']}" for p in found)
    sides = sum(p["stance"] == "support" for p in found)
    ss["pg_discover_msg"] = ("success", f"{len(found)} perspectives discovered ({sides} support, "
                                        f"{len(found) - sides} undermine); edit them before searching.")


def derived_perspectives(text: str) -> list[str]:
    """Perspectives for a typed question with none given: its yes side and no side (rule-based, offline)."""
    from berds_core.diversify.facets import yes_no_sides

    return [p for p in yes_no_sides(text) if p]


def chip_html(j: int, prob: float, verdict: int, gold: bool | None, stance: bool = True, use_gold: bool = False,
              counted: bool | None = None) -> str:
    """One perspective chip, coloured by the labels that score (``use_gold``: the gold label, else the
    judge's ``verdict``: +1 supports, 0 unsure, -1 does not). A probability the judge cannot tell apart from
    its threshold is drawn "unsure" (dashed, a question mark), never as a number that looks like a verdict.
    ``stance=False`` (a judge that reads closeness, not sides): a positive is "on topic", drawn blue, never
    green as "supports"."""
    g = '<span class="g">G✓</span>' if gold else ""
    if use_gold and gold is not None:
        cls, shown = ("bc-chip yes" if gold else "bc-chip"), f"{prob:.2f}"
    elif verdict == 0:
        cls, shown = "bc-chip unsure", "?"
    else:
        cls = ("bc-chip yes" if stance else "bc-chip topical") if verdict > 0 else "bc-chip"
        shown = f"{prob:.2f}"
    what = "judge's probability that it supports" if stance else \
        "judge's probability that it supports (it reads closeness; it cannot tell sides apart)"
    say = {1: "counted", -1: "not counted",
           0: "unsure: too close to the judge's threshold to tell" + (
               "; the threshold policy counts it" if counted else "; not counted")}[int(verdict)]
    tip = f"P{j + 1}: {what} {prob:.2f} ({say})" + ("" if gold is None else f", gold {'yes' if gold else 'no'}")
    return f'<span class="{cls}" title="{esc(tip)}">P{j + 1} {shown}{g}</span>'


def group_html(j: int, others: list[int]) -> str:
    """The mark beside a perspective that excludes others: a passage counts for at most one of them."""
    names = " and ".join(f"P{k + 1}" for k in others)
    tip = (f"P{j + 1} and {names} exclude each other (a statement and its negation): the judge decides each "
           "passage for at most one of them, by which side it argues.")
    return f'<span class="bc-pair" data-testid="perspective-group" title="{esc(tip)}">⇄ {names}</span>'


def card_html(p: dict, words: int = 32, stance=True, use_gold: bool = False) -> str:
    """A passage card with one chip per perspective; ``stance``: whether the judge reads sides, for every
    perspective (a bool) or per perspective (a list: the embedded judge reads sides of opposite perspectives)."""
    tokens = p["text"].split()
    text = esc(" ".join(tokens[:words]))
    if len(tokens) > words:
        text += f'… <details><summary>more</summary>{esc(" ".join(tokens[words:]))}</details>'
    verdicts = p.get("verdicts") or [1 if lb else -1 for lb in p["labels"]]
    counted = p.get("counted") or [v > 0 for v in verdicts]
    sides = [stance] * len(verdicts) if isinstance(stance, bool) else list(stance)
    chips = "".join(chip_html(j, pr, v, None if p["gold"] is None else p["gold"][j], sides[j], use_gold, c)
                    for j, (pr, v, c) in enumerate(zip(p["probs"], verdicts, counted)))
    score = "" if p["score"] is None else f'<span class="bc-score" title="retriever score">{p["score"]:.2f}</span>'
    title = esc(p["title"]) if p["title"] else "&#160;"
    return (f'<div class="bc-card" data-testid="passage-card"><div class="bc-head"><span class="bc-rank">#{p["rank"]}'
            f'</span><span class="bc-title" title="{title}">{title}</span>{score}</div>'
            f'<div class="bc-text">{text}</div><div class="bc-chips">{chips}</div></div>')


def _scoring_labels(res: dict, use_gold: bool) -> list[list[bool]]:
    """Per passage of a column, the labels its metrics were computed with (the judge's: those its policy counts)."""
    gold = use_gold and res["labels_from"] == "gold"
    return [p["gold"] if gold else p.get("counted") or [v > 0 for v in p.get("verdicts", p["labels"])]
            for p in res["passages"]]


def metrics_html(res: dict, k: int, desc: str) -> str:
    """A column's figures, then how it ranks: the figures come first, right under the title, so they line up across
    the columns whatever the descriptions' lengths."""
    return (f'<div class="bc-metrics"><div class="bc-metric">MRecall@{k}<b>{res["mrecall"]:.0f}</b></div>'
            f'<div class="bc-metric">Precision@{k}<b>{res["precision"]:.2f}</b></div></div>'
            f'<div class="bc-desc">{esc(desc)}</div>')


def main() -> None:
    st.title("Playground")
    st.markdown(CSS, unsafe_allow_html=True)  # static styles only, no user text

    cfg, data, retriever, judge, embedder = page_engine()
    stance = describe_judge(judge)["stance"]
    st.caption("One question, its rankings side by side. Chips: the judge's probability that the passage "
               "supports each perspective ("
               + ("green = supports according to the labels chosen under *Labels from*; " if stance else
                  "blue = close to the perspective by the judge, which cannot tell sides apart; green = supports "
                  "by the gold labels when *Labels from* is gold; ")
               + "? = too close to the judge's threshold to count, not counted by the judge's metrics; "
                 "G✓ = the dataset's gold label says it supports; ⇄ = perspectives that exclude each other, a "
                 "passage counted for at most one of them).")
    judge_caveat(cfg.judge)
    cfg_key = tuple(cfg.as_dict().items())

    mode = st.radio("Question", ["From the dataset", "Type my own"], horizontal=True, key="pg_mode",
                    label_visibility="collapsed")
    web_settings, web = None, None  # "Web (live)": the typed question's own corpus from a web search
    pool_id = None  # a typed question that is a dataset question, with its own perspectives: that question's pool
    if mode == "From the dataset":
        by_id = {q.id: q for q in data.questions}
        qid = st.selectbox("Question", list(by_id), key="pg_qid",
                           format_func=lambda i: f"{by_id[i].question}" + (f"  ·  {by_id[i].subset}" if by_id[i].subset else ""))
        question = by_id[qid]
    else:
        text = st.text_input("Your question", key="pg_text", placeholder="Should cities ban cars from their centres?")
        st.session_state.setdefault("pg_pool", os.environ.get(POOL_ENV, ""))
        st.session_state.setdefault("pg_pool_src", POOL_PATH if os.environ.get(POOL_ENV, "").strip() else POOL_DEMO)
        with st.expander("Perspective pool (for Discover perspectives)"):
            pool_src = st.radio("Pool", [POOL_DEMO, POOL_PATH, POOL_UPLOAD], key="pg_pool_src", horizontal=True,
                                help="Where Discover perspectives looks. The built-in demo pool works offline.")
            if pool_src == POOL_DEMO:
                st.caption("Perspective sentences written for this project: the demo questions and a few more "
                           "claims (cars in city centres, compulsory voting, zoos, voting at 16, plastic bags). "
                           "For other questions, use PERSPECTRUM's pool (perspective_pool_v1.0.json).")
            elif pool_src == POOL_PATH:
                st.text_input("Pool file", key="pg_pool", placeholder="/path/to/perspective_pool_v1.0.json",
                              help="A file of perspective sentences: PERSPECTRUM's pool JSON, JSONL {id, text}, "
                                   "TSV/CSV with a text column, or .txt (one per line). Indexed once, then cached.")
            else:
                st.file_uploader("Pool file", type=["json", "jsonl", "tsv", "csv", "txt"], key="pg_pool_upload")
        b1, b2 = st.columns([1, 3])
        b1.button("Discover perspectives", key="pg_discover", on_click=discover_into_box,
                  help="Find the pool's perspectives on this question: relevant, with their stance, "
                       "equivalent ones merged, sides alternating.")
        b2.caption("Pool: " + st.session_state["pg_pool_src"].lower())
        msg = st.session_state.get("pg_discover_msg")
        if msg:
            getattr(st, msg[0])(msg[1])
        persp_text = st.text_area("Perspectives, one per line (optional)", key="pg_persp", height=150,
                                  help="Leave empty to derive a yes side and a no side from the question (offline). "
                                       "An optional [support] / [undermine] tag gives a line's stance.")
        web_settings = web_live.corpus_choice()
        if not text.strip():
            st.info("Type a question to retrieve passages for it.")
            return
        match = next((q for q in data.questions if q.question.strip().lower() == text.strip().lower()), None)
        persp, stances = parse_perspectives(persp_text)
        if match is not None and not persp:
            question = match
        else:
            if not persp:
                persp = derived_perspectives(text.strip())
                if not persp:
                    st.info("Add at least one perspective (one per line) to judge the passages.")
                    return
                st.caption("Perspectives derived offline from the question (edit them above to choose your own).")
            question = Question("typed", text.strip(), persp,
                                stances=stances if any(x is not None for x in stances) else None)
            pool_id = match.id if match is not None else None
        if web_settings is not None:
            web = web_live.open_engine(question, web_settings)
            if web is None:
                return

    c1, c2, c3, c4 = st.columns([1, 1, 1.3, 1])
    k = c1.slider("k (passages per column)", 1, 10, 5, key="pg_k")
    lam = c2.slider("MMR λ (1 = relevance only)", 0.0, 1.0, 0.75, 0.05, key="pg_lam")
    qe_options = [s for s in QE_LABELS if s != "dataset" or question.generated_perspectives]
    qe_source = c3.selectbox("Expansion / re-ranker perspectives", qe_options, key=f"pg_qe_{bool(question.generated_perspectives)}",
                             format_func=QE_LABELS.get)
    has_gold = bool(data.gold) and question.id in data.gold and web is None
    use_gold = c4.radio("Labels from", LABEL_SOURCES if has_gold else ["judge"], horizontal=True, key="pg_labels",
                        help="gold: the dataset's labels (the default where it has them, as on Evaluate); "
                             "judge: the judge chosen in the sidebar.") == "gold"
    policy = "threshold" if use_gold else choose_policy(c4, "pg_policy")  # gold labels: the policy is unused

    toggles = [m for m in METHOD_TABLE if m.toggle]  # the registry's toggles, in its order
    shown = [m.name for m in METHOD_TABLE if m.shown and not m.toggle]  # plain retrieval: always shown
    # column widths: the label (at least 10 characters' room, so a short one is never cut) + the switch (9) + a
    # preset's help icon (3); a longer label wraps between words (CSS above)
    widths = [max(len(m.toggle), 10) + (12 if m.preset else 9) for m in toggles]
    for slot, m in zip(st.columns(widths), toggles):
        preset = get_preset(m.preset) if m.preset else None
        tip = (f"The studio's own pipeline (berds retrieve --preset {m.preset}, `{preset}`): {preset.describe()}. "
               "Chosen by question-grouped cross-validation.") if preset else None
        if slot.toggle(m.toggle, value=ON[m.name], key=f"pg_{m.name}", help=tip):
            shown.append(m.name)

    st.caption(f"Metrics for this question, scored with the {'gold' if use_gold else 'judge'} labels"
               + ("." if use_gold else f" (policy {policy})."))
    stance_of = list(question.stances or []) + [None] * len(question.perspectives)
    partner = {j: [k for k in g if k != j] for g in question_groups(judge, question) for j in g}
    st.markdown("".join(f'<div class="bc-persp" data-testid="perspective-line"><span class="bc-tag">P{j + 1}</span>'
                        + (f'<span class="bc-stance">{esc(stance_of[j])}</span>' if stance_of[j] else "")
                        + f'{esc(p)}' + (group_html(j, partner[j]) if j in partner else "") + '</div>'
                        for j, p in enumerate(question.perspectives)), unsafe_allow_html=True)

    qkey = _question_key(question)
    # each column's pipeline (the λ slider is MMR's; the perspective source goes to the stages that read one)
    pipes = {m: column_pipeline(m, lam if slider_lambda(m) else None, qe_source) for m in shown}
    results = {}
    with st.spinner("Retrieving and judging…"), foreground():  # the warm-up pauses meanwhile
        for method in shown:
            try:
                args = (cfg_key, qkey, str(pipes[method]), method, k, use_gold, policy)
                results[method] = web.column(*args, question) if web else cached_column(*args, pool_id)
            except Exception as e:  # one failing diversifier must not take the page down
                results[method] = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}

    cols = st.columns(len(shown))
    for col, method in zip(cols, shown):
        name, res = COLUMNS[method], results[method]
        pipe = pipes[method]  # a pipeline that names its own retriever (the preset) shows its spec
        desc = pipe.describe(cfg.retriever if not web else "web search") + (f" ({pipe})" if pipe.retriever else "")
        with col:
            st.markdown(f"#### {name}")
            if "error" in res:
                show_error(res["error"])
                continue
            # a judge that reads closeness still decides the side of opposite perspectives: those chips read sides
            sides = [stance or j in partner for j in range(len(question.perspectives))]
            st.markdown(metrics_html(res, k, desc) + "".join(card_html(p, stance=sides,
                                                                       use_gold=res["labels_from"] == "gold")
                                                             for p in res["passages"]),
                        unsafe_allow_html=True)

    ok = [r for r in results.values() if "error" not in r]
    plain = results.get("none", {})
    if "passages" in plain and (not plain["passages"] or "lexical" in retriever_traits(cfg.retriever) and
                                not any((p["score"] or 0) > 0 for p in plain["passages"])):
        st.info("Nothing found: no passage of this corpus shares a word with the question. "
                "Try other words, or choose another corpus in the sidebar.", icon=":material/search_off:")
    elif ok and not any(any(any(row) for row in _scoring_labels(r, use_gold)) or any(r.get("unsure") or [])
                        for r in ok):  # nothing counted and nothing the judge is unsure about
        st.info(f"Nothing relevant found: none of the passages retrieved supports any perspective "
                f"(according to the {'gold' if use_gold else 'judge'} labels). This corpus may not cover the "
                "question; try other words, or choose another corpus in the sidebar.", icon=":material/search_off:")
    if ok:
        covered = [any(r["covered"][j] for r in ok) for j in range(len(question.perspectives))]
        missing = [j for j, c in enumerate(covered) if not c]
        unsure = [j for j in missing if any(r.get("unsure", [False] * len(covered))[j] for r in ok)]
        # covered, but in no column by a pair the judge is sure of (the threshold policy counts unsure pairs)
        thin = [j for j, c in enumerate(covered) if c and not any(
            r["covered"][j] and not r.get("unsure", [False] * len(covered))[j] for r in ok)]
        if thin:
            st.info(f"Covered only by passages the judge is unsure about: {', '.join(f'P{j + 1}' for j in thin)} "
                    f"(chips with a question mark; policy {policy} counts them).")
        if not missing:
            st.success(f"Every perspective is covered by at least one column in the top {k}"
                       + ("." if use_gold else f" (the judge's labels, policy {policy})."))
        else:
            if unsure:
                st.info(f"The judge is unsure about {len(unsure)} perspective(s) "
                        f"({', '.join(f'P{j + 1}' for j in unsure)}): passages in the top {k} are too close to its "
                        "threshold to count as covering them (chips with a question mark).")
            with foreground():
                best = (web.best_ranks(cfg_key, qkey, tuple(missing), use_gold, policy, question) if web else
                        cached_best_ranks(cfg_key, qkey, tuple(missing), use_gold, policy, pool_id))
            lines = []
            for j in missing:
                r = best["ranks"].get(j)
                where = (f"first supported at rank {r} of plain retrieval" if r else  # the number searched
                         f"not supported by any of the top {best['searched']} passages of plain retrieval")
                lines.append(f'<div class="bc-miss"><span class="bc-tag">P{j + 1}</span>{esc(question.perspectives[j])}'
                             f' — <b>{where}</b></div>')
            st.warning(f"No column covers {len(missing)} perspective(s) in its top {k}:")
            st.markdown("".join(lines), unsafe_allow_html=True)


main()
