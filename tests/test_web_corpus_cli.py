"""The whole path against real servers on 127.0.0.1: ``berds corpus web`` (Serper's API and SearXNG's),
``berds retrieve --corpus-per-question``, ``berds evaluate``; resumption; one log line per bad page; no key
anywhere."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.corpora.memory import load_corpus
from berds_core.runs import judged_mask, read_run
from web_servers import BAD, KEYS, LATIN1_META_TEXT, LATIN1_TEXT, search_server, site_results, site_server

Q1 = "Should cities ban cars from their centres?"
Q2 = "Do car bans hurt small shops?"
QUESTIONS = [
    {"id": "q1", "question": Q1, "perspectives": ["Banning cars cuts pollution and makes streets safer.",
                                                  "Banning cars hurts shops and people who depend on cars."]},
    {"id": "city/q2", "question": Q2, "perspectives": ["Shops lose customers when cars are banned.",
                                                       "Footfall rises in car-free streets."]},
]


@pytest.fixture(scope="module")
def servers():
    with site_server(slow_seconds=2.0) as site:
        results = site_results(site.url)
        table = {Q1: results, Q2: [r for r in results if r[0].endswith(("/articles/cars-against", "/missing",
                                                                            "/articles/cars-ban"))]}
        with search_server(table) as search:
            yield site, search


@pytest.fixture()
def env(tmp_path, monkeypatch, servers):
    site, search = servers
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SERPER_API_KEY", KEYS["serper"])
    monkeypatch.setenv("BERDS_SERPER_URL", search.url + "/serper/search")
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return tmp_path, qfile, site, search


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0]), err


def _web(qfile, out, *extra):
    return ["corpus", "web", "--questions", str(qfile), "--search", "serper", "--top", "100", "--out", str(out),
            "--timeout", "0.5", "--page-timeout", "5", "--max-bytes", "1000000", "--json", *extra]


def _all_files(*roots):
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for n in names:
                yield Path(dirpath) / n


def _no_key_anywhere(texts, *roots):
    for text in texts:
        assert not any(k in text for k in KEYS.values())
    for f in _all_files(*roots):
        data = f.read_bytes()
        assert not any(k.encode() in data for k in KEYS.values()), f


def test_corpus_web_then_retrieve_per_question_then_evaluate(env, capsys):
    tmp, qfile, site, search = env
    out = tmp / "web"
    res, err = _run(capsys, _web(qfile, out))
    assert res["questions"] == 2 and res["complete"] == 2 and res["search_failed"] == []
    assert res["backend"] == f"serper@{search.url.split('://')[1]}/serper/search"
    assert res["pages_requested"] == 16 + 3 and res["passages"] > 5

    q1 = out / "q1"
    rows = [json.loads(line) for line in (q1 / "passages.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows and all(set(r) == {"id", "title", "text", "url"} for r in rows)
    assert all(r["id"].startswith(r["url"] + "-") and r["id"].rsplit("-", 1)[1].isdigit() for r in rows)
    assert all(len(r["text"].split()) <= 100 for r in rows)
    by_url = {}
    for r in rows:
        by_url.setdefault(r["url"][len(site.url):], []).append(r)
    assert set(by_url) == {"/articles/cars-ban", "/boilerplate", "/articles/cars-against", "/latin1", "/tricky",
                           "/flaky", "/latin1-meta", "/plain.txt"}
    assert by_url["/articles/cars-ban"][0]["title"] == "Car-free city centres cut pollution"  # the page's title
    assert by_url["/plain.txt"][0]["title"] == "Result /plain.txt"  # no page title: the search result's
    text = " ".join(r["text"] for r in rows)
    assert " ".join(LATIN1_TEXT.split()[:12]) in text and " ".join(LATIN1_META_TEXT.split()[:8]) in text
    assert '<script>alert("pwned")</script>' in text and "**not bold**" in text
    assert "SCRIPT-BODY-NEVER-A-PASSAGE" not in text and "TRACKER-JS-CODE" not in text
    assert "Celebrity gossip" not in text and "filler text" not in text

    # the failure log: exactly one line per search result, one per bad page with its reason
    log = [json.loads(line) for line in (q1 / "fetch-log.jsonl").read_text().splitlines()]
    assert [r["url"] for r in log] == [u for u, _, _ in site_results(site.url)]
    q1_err = err.split("[1/2] q1 done:")[0]  # stderr: q1's lines come before its summary line
    for path, reason in BAD.items():
        lines = [r for r in log if r["url"] == site.url + path]
        assert len(lines) == 1 and lines[0]["outcome"] in ("failed", "skipped") and reason in lines[0]["reason"]
        said = [ln for ln in q1_err.splitlines() if f"{site.url}{path}: " in ln]
        assert len(said) == 1 and reason in said[0], path
    moved = next(r for r in log if r["url"].endswith("/moved"))
    assert moved["outcome"] == "skipped" and moved["reason"] == "skipped: same page as rank 6"

    manifest = json.loads((q1 / "manifest.json").read_text())
    assert manifest["question_id"] == "q1" and manifest["query"] == Q1 and manifest["complete"]
    assert manifest["backend"] == res["backend"] and len(manifest["date"]) == 10
    assert {f["url"][len(site.url):] for f in manifest["fetched"]} == set(by_url)
    bad = {e["url"][len(site.url):]: e["reason"] for e in manifest["failed"] + manifest["skipped"]}
    assert set(bad) == set(BAD) | {"/moved"} and all(bad[p] for p in bad)
    assert manifest["counts"]["passages"] == len(rows)

    # an id with a slash gets a safe folder; its manifest keeps the id
    q2 = [p for p in out.iterdir() if p.name != "q1"]
    assert len(q2) == 1 and "/" not in q2[0].name
    assert json.loads((q2[0] / "manifest.json").read_text())["question_id"] == "city/q2"

    # any command takes the snapshot as a corpus: a question folder, its passages.jsonl or the whole folder
    assert len(load_corpus(q1)) == len(rows) == len(load_corpus(q1 / "passages.jsonl"))
    assert len(load_corpus(out)) == len(rows)  # q2's pages repeat q1's: duplicates dropped

    # retrieve within each question's own corpus, then evaluate with gold labels on web passage ids
    run = tmp / "run.jsonl"
    info, _ = _run(capsys, ["retrieve", "--questions", str(qfile), "--corpus-per-question", str(out), "--k", "100",
                            "--out", str(run), "--json"])
    assert info["questions"] == 2 and info["empty_questions"] == []
    entries = read_run(run)
    assert [e["id"] for e in entries] == ["q1", "city/q2"]
    assert len(entries[0]["ctxs"]) == len(rows)
    q2_urls = {r["url"] for r in map(json.loads, (q2[0] / "passages.jsonl").read_text().splitlines())}
    assert {c["id"].rsplit("-", 1)[0] for c in entries[1]["ctxs"]} == q2_urls  # its own corpus only
    assert q2_urls == {site.url + "/articles/cars-ban", site.url + "/articles/cars-against"}
    gold = tmp / "gold.jsonl"
    gold.write_text("".join(json.dumps(g) + "\n" for g in [
        {"question_id": "q1", "passage_id": f"{site.url}/articles/cars-ban-0", "perspective": 0},
        {"question_id": "q1", "passage_id": f"{site.url}/articles/cars-against-0", "perspective": 1},
        {"question_id": "city/q2", "passage_id": f"{site.url}/articles/cars-against-0", "perspective": 0}]))
    ev, _ = _run(capsys, ["evaluate", "--run", str(run), "--gold", str(gold), "--ks", "1,100", "--json",
                          "--bootstrap", "0", "--per-question"])
    per_q = {p["id"]: p for p in ev["per_question"]}
    assert per_q["q1"]["mrecall@100"] == 1.0  # both sides are in q1's web corpus
    assert per_q["city/q2"]["mrecall@100"] == 0.0  # the second side has no gold passage
    assert ev["n"] == 2

    _no_key_anywhere([err, json.dumps(res), json.dumps(info)], out, tmp / "cache")


def test_resume_fetches_nothing_twice(env, capsys):
    tmp, qfile, site, search = env
    out = tmp / "web"
    _run(capsys, _web(qfile, out))
    before, n_search = dict(site.counts), len(search.requests)
    res, _ = _run(capsys, _web(qfile, out))
    assert res["questions_reused"] == 2 and res["pages_requested"] == 0
    assert dict(site.counts) == before and len(search.requests) == n_search

    # a build interrupted before its manifest was written: saved pages and lasting failures are kept,
    # only the page that timed out (a passing failure) is asked for again, and the search is not repeated
    (out / "q1" / "manifest.json").unlink()
    (out / "q1" / "passages.jsonl").unlink()
    res, _ = _run(capsys, _web(qfile, out))
    assert res["questions_reused"] == 1 and res["pages_requested"] == 1
    changed = {p for p in site.counts if site.counts[p] != before.get(p)}
    assert changed == {"/slow", "/robots.txt"} and site.counts["/slow"] == before["/slow"] + 1
    assert len(search.requests) == n_search
    assert (out / "q1" / "passages.jsonl").exists()

    # another extractor re-reads the saved pages: nothing fetched
    before = dict(site.counts)
    res, _ = _run(capsys, _web(qfile, out, "--extract", "readability"))
    assert res["pages_requested"] == 1 and set(p for p in site.counts if site.counts[p] != before.get(p)) <= {
        "/slow", "/robots.txt"}
    manifest = json.loads((out / "q1" / "manifest.json").read_text())
    assert manifest["extractor"] == "readability" and manifest["counts"]["passages"] > 0


def test_searxng_spec_and_empty_corpus_question(env, capsys, servers):
    tmp, qfile, site, search = env
    qfile.write_text(json.dumps({"id": "q9", "question": "nothing but bad pages", "perspectives": ["a", "b"]}) + "\n")
    search.results["nothing but bad pages"] = [(site.url + p, "bad", "bad") for p in ("/missing", "/paper.pdf")]
    out = tmp / "web2"
    res, err = _run(capsys, ["corpus", "web", "--questions", str(qfile), "--search", f"searxng:{search.url}",
                             "--out", str(out), "--json"])
    assert res["pages_fetched"] == 0 and res["pages_failed"] == 1 and res["pages_skipped"] == 1
    assert (out / "q9" / "passages.jsonl").read_text() == ""
    assert "1 of 1 questions have no passages (first: 'q9'" in err
    # an empty corpus is an error unless asked to skip it (issue 38, item 3)
    assert main(["retrieve", "--questions", str(qfile), "--corpus-per-question", str(out),
                 "--out", str(tmp / "r.jsonl"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "1 of 1 questions have an empty corpus (first: 'q9'" in err and "--skip-empty" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp / "r.jsonl").exists()
    info, err = _run(capsys, ["retrieve", "--questions", str(qfile), "--corpus-per-question", str(out),
                              "--out", str(tmp / "r.jsonl"), "--json", "--skip-empty"])
    assert info["empty_questions"] == ["q9"] and read_run(tmp / "r.jsonl")[0]["ctxs"] == []
    assert "warning: 1 of 1 questions have an empty corpus" in err


def test_bad_input_exits_2_with_one_line_and_no_key(env, capsys, monkeypatch):
    tmp, qfile, site, search = env
    wrong = "WRONG-serper-key-1234567"
    monkeypatch.setenv("SERPER_API_KEY", wrong)
    assert main(_web(qfile, tmp / "w")) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("berds corpus: error: --search:") and "HTTP 401" in err and "SERPER_API_KEY" in err
    assert wrong not in err
    _no_key_anywhere([], tmp / "w")
    assert not any(wrong.encode() in f.read_bytes() for f in _all_files(tmp / "w", tmp / "cache"))

    monkeypatch.delenv("SERPER_API_KEY")
    assert main(_web(qfile, tmp / "w")) == 2
    assert "needs an API key: set SERPER_API_KEY" in capsys.readouterr().err
    assert main(["corpus", "web", "--questions", str(qfile), "--search", "altavista", "--out", str(tmp / "w")]) == 2
    assert "choose from: searxng:<base url>, serper" in capsys.readouterr().err
    assert main(_web(qfile, tmp / "w", "--top", "0")) == 2
    capsys.readouterr()

    run = str(tmp / "r.jsonl")
    assert main(["retrieve", "--questions", str(qfile), "--out", run]) == 2
    assert "either --corpus or --corpus-per-question" in capsys.readouterr().err
    empty = tmp / "empty"
    empty.mkdir()
    assert main(["retrieve", "--questions", str(qfile), "--corpus-per-question", str(empty), "--out", run]) == 2
    assert "no question folders" in capsys.readouterr().err
    (empty / "q1").mkdir()
    (empty / "q1" / "passages.jsonl").write_text(json.dumps({"id": "a", "text": "some words"}) + "\n")
    assert main(["retrieve", "--questions", str(qfile), "--corpus-per-question", str(empty), "--out", run]) == 2
    assert "no corpus for question 'city/q2'" in capsys.readouterr().err


def test_unreachable_search_server_is_refused_before_any_work(env, capsys):
    """``searxng:<url>`` names a server: checked before any work (issue 38, item 3)."""
    from browser_harness import free_port

    tmp, qfile, site, search = env
    out = tmp / "web3"
    dead = f"http://127.0.0.1:{free_port()}"
    assert main(["corpus", "web", "--questions", str(qfile), "--search", f"searxng:{dead}", "--out", str(out),
                 "--json", "--retries", "0"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("berds corpus: error: --search: cannot reach the server " + dead)
    assert cap.out == "" and not out.exists()  # nothing searched, nothing written


def test_failed_searches_are_recorded_per_question_exit_2_then_retried(env, capsys):
    """A search server that answers its front page but fails every search: each question's failure is
    recorded; exit 2 unless --skip-missing; a rerun against a working server completes them."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Failing(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/" else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    failing = f"searxng:http://127.0.0.1:{srv.server_address[1]}"
    tmp, qfile, site, search = env
    out = tmp / "web3"
    try:
        argv = ["corpus", "web", "--questions", str(qfile), "--search", failing, "--out", str(out), "--json",
                "--retries", "0", "--quiet"]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "2 of 2 questions got no search results (first: 'q1': " in err[0]
        assert "--skip-missing" in err[0]
        manifest = json.loads((out / "q1" / "manifest.json").read_text())
        assert manifest["complete"] is False and "HTTP 503" in manifest["search_error"]
        res, err = _run(capsys, argv + ["--skip-missing"])
        assert res["search_failed"] == ["q1", "city/q2"] and res["complete"] == 0
        assert "warning: 2 of 2 questions got no search results" in err
    finally:
        srv.shutdown()
    shutil.rmtree(out / "q1")
    res, _ = _run(capsys, ["corpus", "web", "--questions", str(qfile), "--search", f"searxng:{search.url}",
                           "--out", str(out), "--json", "--timeout", "0.5"])
    assert res["complete"] == 2 and res["passages"] > 0


@pytest.mark.slow
def test_web_corpus_judged_by_the_embedded_judge_then_evaluated(env, capsys):
    """The paper's pipeline with no gold labels: web corpus -> retrieve -> judge -> evaluate."""
    tmp, qfile, site, search = env
    out, run, judged = tmp / "web", tmp / "run.jsonl", tmp / "judged.jsonl"
    _run(capsys, _web(qfile, out, "--quiet"))
    _run(capsys, ["retrieve", "--questions", str(qfile), "--corpus-per-question", str(out), "--k", "5",
                  "--out", str(run), "--json", "--quiet"])
    j, _ = _run(capsys, ["judge", "--run", str(run), "--judge", "embedded", "--out", str(judged), "--json", "--quiet"])
    ev, _ = _run(capsys, ["evaluate", "--run", str(judged), "--labels", j["judge"], "--k", "5", "--json",
                          "--bootstrap", "0"])
    assert ev["n"] == 2 and 0.0 <= ev["mrecall"] <= 1.0 and 0.0 <= ev["precision"] <= 1.0
    entries = read_run(judged)
    # The BERDS layout: one boolean per perspective inside every passage.
    key = f"{j['judge']}-preds"
    assert all(len(c[key]) == len(e["perspectives"]) for e in entries for c in e["ctxs"])
    assert all(judged_mask(e, j["judge"]).all() for e in entries)
    assert all(c["id"].startswith(site.url) for e in entries for c in e["ctxs"])
