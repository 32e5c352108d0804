"""Bad command lines, every verb and every kind of output: exit 2, one line, no traceback (issue 38).

One row per case: an id, the argv (``{name}`` fills in a prepared file or folder, see :func:`files`), and a
fragment the one-line message must hold. Add a row when a new bad input is found; a meta-test keeps every
verb of the CLI in the table. The rows run in one process (``berds_core.cli.main``), so a traceback is an
exception here, never a quiet exit code; rows marked ``proc`` run as a subprocess (an environment of their
own: Ray missing, a stdin).

Output kinds covered: a file (``--out``), a folder (``--out`` of import and corpus web, ``--out-dir``,
``--index-dir``), standard output (``-``), a database (``--db``), and what an output path may be: a folder
where a file is wanted, a file where a folder is wanted, a dangling link, an input, an immutable folder.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from berds_core.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _dead_port() -> int:
    from browser_harness import free_port

    return free_port()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The files and folders the rows name."""
    t = tmp_path_factory.mktemp("bad")
    d = t / "d"
    assert main(["import", "demo", "--out", str(d), "--quiet"]) == 0
    run = t / "run.jsonl"
    assert main(["retrieve", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                 "--k", "3", "--out", str(run), "--quiet"]) == 0
    rows = [json.loads(x) for x in run.read_text().splitlines()]
    for r in rows:
        for c in r["ctxs"]:
            c["id"] = "x" + c["id"]
    (t / "otherids.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (t / "pairs.tsv").write_text("question\tid\tdocument\tperspective\tlabel\nQ?\t1\tSome passage.\tA view.\t1\n")
    (t / "badquote.tsv").write_text('question\tid\tdocument\tperspective\tlabel\nQ?\t1\t"open quote\tA view.\t1\n')
    (t / "answers.jsonl").write_text(json.dumps({"id": "q1", "question": "Q?", "perspectives": ["A", "B"],
                                                 "generation": "An answer."}) + "\n")
    (t / "badjson.jsonl").write_text('{"id": "a", "text": "fine"}\nnot json\n')
    (t / "claims.jsonl").write_text(json.dumps({"id": "c1", "claim": "Cities should ban cars."}) + "\n")
    (t / "pool.txt").write_text("Cars pollute the air.\nCars give people freedom.\n")
    (t / "coffee.jsonl").write_text(json.dumps({"id": "coffee", "question": "Is coffee good for you?",
                                                "perspectives": ["Yes", "No"]}) + "\n")
    (t / "folder").mkdir()
    (t / "tinymodel").mkdir()  # a local model folder (its config is read only after the adapter is located)
    (t / "tinymodel" / "config.json").write_text("{}")
    (t / "emptyadapter").mkdir()
    (t / "afile").write_text("x")
    (t / "dangling").symlink_to(t / "nowhere" / "out.jsonl")
    empty = t / "emptycorpora"
    for q in json.loads("[" + ",".join((d / "questions.jsonl").read_text().splitlines()) + "]"):
        qd = empty / q["id"].replace("/", "_")
        qd.mkdir(parents=True)
        (qd / "passages.jsonl").write_text("")
        (qd / "manifest.json").write_text(json.dumps({"question_id": q["id"]}))
    db = t / "lab.db"
    assert main(["annotations", "demo", "--db", str(db), "--annotators", "ann1", "--n", "6", "--quiet"]) == 0
    immutable = t / "immutable"
    immutable.mkdir()
    chattr = subprocess.run(["chattr", "+i", str(immutable)], capture_output=True).returncode == 0
    paths = {"d": d, "q": d / "questions.jsonl", "c": d / "corpus.jsonl", "gold": d / "gold.jsonl", "run": run,
             "t": t, "db": db, "immutable": immutable if chattr else None, "dead": f"http://127.0.0.1:{_dead_port()}",
             "no_gpu": None if any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")) else True}
    paths.update({p.stem if p.is_file() else p.name: p for p in t.iterdir() if p.name not in ("d",)})
    paths["dangling"] = t / "dangling"
    yield paths
    if chattr:
        subprocess.run(["chattr", "-i", str(immutable)], capture_output=True)


# (id, argv, fragment of the one-line message[, options]); options: {"proc": True, "env": {...}, "stdin": "..."}
ROWS = [
    # ---- retrieve: inputs, options, pipelines, every kind of output
    ("retrieve: questions missing", "retrieve --questions {t}/nope.jsonl --corpus {c} --out {t}/o.jsonl",
     "file not found"),
    ("retrieve: k 0", "retrieve --questions {q} --corpus {c} --k 0 --out {t}/o.jsonl", "k must be at least 1"),
    ("retrieve: corpus not JSON", "retrieve --questions {q} --corpus {badjson} --out {t}/o.jsonl", "malformed JSON"),
    ("retrieve: NaN in a stage", "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --pipeline bm25>>mmr(lam=nan)",
     "lam must be a finite number"),
    ("retrieve: inf in a stage", "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --pipeline bm25>>mmr(lam=1e999)",
     "finite number"),
    ("retrieve: probs=judge without a judge",
     "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --pipeline bm25>>coverage(probs=judge)",
     "coverage(probs=judge) needs a judge"),
    ("retrieve: keep over the depth",
     "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --pipeline bm25%3>>coverage(keep=50)",
     "keeps more candidates than the pipeline has (3)"),
    ("retrieve: unknown stage", "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --pipeline bm25>>nosuch",
     "unknown stage 'nosuch'"),
    ("retrieve: nprobe on flat", "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --nprobe 4",
     "is for IVF indexes"),
    ("retrieve: --out a folder", "retrieve --questions {q} --corpus {c} --out {folder}", "is a directory"),
    ("retrieve: --out a dangling link", "retrieve --questions {q} --corpus {c} --out {dangling}", "dangling"),
    ("retrieve: --out the questions", "retrieve --questions {q} --corpus {c} --out {q}", "is the input --questions"),
    ("retrieve: --out under a file", "retrieve --questions {q} --corpus {c} --out {afile}/o.jsonl", "is not a folder"),
    ("retrieve: --out - with --json", "retrieve --questions {q} --corpus {c} --out - --json",
     "writes the output to standard output, where --json"),
    ("retrieve: --out in an immutable folder", "retrieve --questions {q} --corpus {c} --out {immutable}/o.jsonl",
     "is not writable", {"needs": "immutable"}),
    ("retrieve: empty question corpora", "retrieve --questions {q} --corpus-per-question {emptycorpora} --out {t}/o.jsonl",
     "have an empty corpus"),
    ("retrieve: --skip-empty without --corpus-per-question",
     "retrieve --questions {q} --corpus {c} --skip-empty --out {t}/o.jsonl", "--skip-empty: is for --corpus-per-question"),
    ("retrieve: --encoding with bm25",  # issue 63: silently ignored before
     "retrieve --questions {q} --corpus {c} --retriever bm25 --encoding int8 --out {t}/o.jsonl",
     "--encoding: is a dense encoder's precision; bm25 has no encoder"),
    ("retrieve: BERDS_ENCODING bogus",  # issue 63: refused after two progress lines before
     "retrieve --questions {q} --corpus {c} --retriever dense --out {t}/o.jsonl",
     "BERDS_ENCODING: must be one of auto, fp32, fp16, bf16, int8; got 'bogus'", {"env": {"BERDS_ENCODING": "bogus"}}),
    ("retrieve: bad --ray address", "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --ray 127.0.0.1:1",
     "cannot reach Ray"),
    ("retrieve: --ray without Ray installed", "retrieve --questions {q} --corpus {c} --out {t}/o.jsonl --ray local",
     "pip install -e .[ray]", {"proc": True, "no_ray": True}),
    # ---- index: the --index-dir folder and plans, before any model loads
    ("index: --index-dir a file", "index --corpus {c} --index-dir {afile}", "--index-dir': exists and is not a folder"),
    ("index: --index-dir immutable", "index --corpus {c} --index-dir {immutable}/idx", "is not writable",
     {"needs": "immutable"}),
    ("index: factory with too many lists", "index --corpus {c} --retriever dense --index IVF99999,PQ64",
     "needs at least"),
    ("index: budget too small", "index --corpus {c} --retriever dense --index ivfpq --memory-budget 1K",
     "cannot hold the"),
    ("index: bogus factory", "index --corpus {c} --retriever dense --index bogus", "is not flat, hnsw, ivfpq"),
    ("index: bm25 with a model", "index --corpus {c} --model x", "bm25 takes no model"),
    ("index: bm25 with --encoding", "index --corpus {c} --encoding bf16", "--encoding: is a dense encoder's precision"),
    ("index: BERDS_RAY_ADDRESS wrong, BM25", "index --corpus {c}", "BERDS_RAY_ADDRESS: cannot reach Ray",
     {"env": {"BERDS_RAY_ADDRESS": "127.0.0.1:1"}}),
    ("index: --ray without Ray installed", "index --corpus {c} --ray local", "pip install -e .[ray]",
     {"proc": True, "no_ray": True}),
    # ---- judge / judge-eval
    ("judge: run missing", "judge --run {t}/nope.jsonl --out {t}/j.jsonl", "file not found"),
    ("judge: threshold NaN", "judge --run {run} --out {t}/j.jsonl --threshold nan", "must be between 0 and 1"),
    ("judge: unknown judge", "judge --run {run} --out {t}/j.jsonl --judge nosuch", "choose from"),
    ("judge: --out the run", "judge --run {run} --out {run}", "is the input --run"),
    ("judge: --out a folder", "judge --run {run} --out {folder}", "is a directory"),
    ("judge: unreachable server", "judge --run {run} --out {t}/j.jsonl --judge openai:m@{dead}",
     "cannot reach the server"),
    ("judge: an @ in the server address's fragment",
     "judge --run {run} --out {t}/j.jsonl --judge openai:m@http://127.0.0.1:9999/v1#@127.0.0.1:9/v1", "holds an '@'"),
    ("judge: --device bogus", "judge --run {run} --out {t}/j.jsonl --device bogus", "is not a device"),
    ("judge: --device cuda without a GPU", "judge --run {run} --out {t}/j.jsonl --device cuda",
     "this machine has no CUDA device", {"needs": "no_gpu"}),
    ("judge: --timeout -1", "judge --run {run} --out {t}/j.jsonl --judge openai:m@{dead} --timeout -1",
     "must be more than 0"),
    ("judge: --batch-size 0", "judge --run {run} --out {t}/j.jsonl --batch-size 0", "must be 1 or more"),
    ("judge: --batch-size -4", "judge --run {run} --out {t}/j.jsonl --batch-size -4", "must be 1 or more"),
    ("judge: --concurrency 0", "judge --run {run} --out {t}/j.jsonl --judge openai:m@{dead} --concurrency 0",
     "must be 1 or more"),
    ("judge: --retries -1", "judge --run {run} --out {t}/j.jsonl --judge openai:m@{dead} --retries -1",
     "must be 0 or more"),
    ("judge: an empty local folder as the adapter", "judge --run {run} --out {t}/j.jsonl --judge hf:{tinymodel}+{emptyadapter}",
     "the folder has no adapter_config.json"),
    ("judge: --encoding with an hf judge",  # issue 63: silently ignored before
     "judge --run {run} --out {t}/j.jsonl --judge hf:{tinymodel} --encoding int8",
     "--encoding: only the embedded and argkp judges take this option"),
    ("judge-eval: --encoding with the BERDS evaluator",
     "judge-eval --pairs {pairs} --judge berds-evaluator --encoding bf16",
     "--encoding: only the embedded and argkp judges take this option"),
    ("judge-eval: unterminated quote", "judge-eval --pairs {badquote}", "unterminated quote"),
    ("judge-eval: --out a dangling link", "judge-eval --pairs {pairs} --out {dangling}", "dangling"),
    ("judge-eval: bad --ray address", "judge-eval --pairs {pairs} --ray 127.0.0.1:1", "cannot reach Ray"),
    ("judge-eval: --ray without Ray installed", "judge-eval --pairs {pairs} --ray local", "pip install -e .[ray]",
     {"proc": True, "no_ray": True}),
    ("kpa-match: folder without the split", "kpa-match --data {folder} --split dev --out {t}/k.json",
     "missing: split 'dev' needs arguments_dev.csv"),
    ("kpa-match: --out a folder", "kpa-match --data {folder} --split dev --out {folder}", "is a directory"),
    # ---- evaluate / export-trec / coverage
    ("evaluate: ids not in the gold", "evaluate --run {otherids} --gold {gold}", "no ranked passage id is in the gold"),
    ("evaluate: --measures empty", "evaluate --run {run} --gold {gold} --measures=", "name at least one measure"),
    ("evaluate: --measures commas", "evaluate --run {run} --gold {gold} --measures ,,,", "name at least one measure"),
    ("evaluate: --ks 0", "evaluate --run {run} --gold {gold} --ks 0", "k must be at least 1"),
    ("evaluate: run missing", "evaluate --run {t}/nope.jsonl --gold {gold}", "file not found"),
    ("export-trec: ids not in the gold", "export-trec --run {otherids} --gold {gold} --out-dir {t}/trec",
     "no ranked passage id is in the gold"),
    ("export-trec: --out-dir a file", "export-trec --run {run} --gold {gold} --out-dir {afile}",
     "exists and is not a folder"),
    ("coverage: runs missing", "coverage --runs {t}/nope.jsonl --gold {gold}", "file not found"),
    # ---- import / corpus
    ("import: --out a file", "import demo --out {afile}", "exists and is not a folder"),
    ("import: --out -", "import demo --out -", "'-' (standard output) is for one file"),
    ("export-trec: --out-dir -", "export-trec --run {run} --gold {gold} --out-dir -", "is for one file"),
    ("corpus web: server down", "corpus web --questions {q} --search searxng:{dead} --out {t}/web",
     "cannot reach the server"),
    ("corpus web: replay without the question", "corpus web --questions {coffee} --search replay --out {t}/web",
     "not in the recording replay:demo"),
    ("corpus web: unknown backend", "corpus web --questions {q} --search altavista --out {t}/web", "choose from"),
    ("corpus web: top 0", "corpus web --questions {q} --search replay --top 0 --out {t}/web", "must be at least 1"),
    ("corpus web: --out a file", "corpus web --questions {q} --search replay --out {afile}",
     "exists and is not a folder"),
    ("corpus ingest: malformed", "corpus ingest --corpus {badjson}", "malformed JSON"),
    ("corpus ingest: bad --ray address", "corpus ingest --corpus {c} --ray 127.0.0.1:1", "cannot reach Ray"),
    # ---- annotations and the lab
    ("annotations import: pairs missing", "annotations import --db {t}/new.db --pairs {t}/nope.tsv", "file not found"),
    ("annotations label: no assignment", "annotations label --db {db} --annotator mallory --pair {pair} --label 1",
     "'mallory' has no assignment of pair"),
    ("annotations label: unknown pair", "annotations label --db {db} --annotator ann1 --pair nosuch --label 1",
     "no pair with id 'nosuch'"),
    ("annotations undo: no database", "annotations undo --db {t}/none.db --annotator ann1", "none.db"),
    ("annotations adjudicate: label 2", "annotations adjudicate --db {db} --pair {pair} --label 2 --adjudicator r",
     "invalid choice"),
    ("annotations progress: no database", "annotations progress --db {t}/none.db --annotator ann1", "none.db"),
    ("annotations export: --out a folder", "annotations export --db {db} --out {folder}", "is a directory"),
    ("annotations export: --out - with --json", "annotations export --db {db} --out - --json", "--json"),
    ("annotations export: --out the database", "annotations export --db {db} --out {db}", "is the input"),
    ("annotations tasks: run missing", "annotations tasks --db {db} --run {t}/nope.jsonl --n 2 --annotators a",
     "file not found"),
    ("annotations demo: --db a folder", "annotations demo --db {folder} --annotators a", "folder"),
    ("annotations guidelines: --set missing", "annotations guidelines --db {db} --set {t}/nope.md", "file not found"),
    # the round's quality controls (issue 40)
    ("annotations round: unknown task set", "annotations round --db {db} --task-set nosuch", "no task set named 'nosuch'"),
    ("annotations round: check rate 2", "annotations round --db {db} --task-set demo --check-rate 2",
     "check rate is a share between 0 and 1"),
    ("annotations checks: no database", "annotations checks --db {t}/none.db", "none.db"),
    ("annotations pause: unknown task set", "annotations pause --db {db} --task-set nosuch --annotator ann1",
     "no task set named 'nosuch'"),
    ("annotations resume: unknown task set", "annotations resume --db {db} --task-set nosuch --annotator ann1",
     "no task set named 'nosuch'"),
    ("annotations qualification: --retry without a task set", "annotations qualification --db {db} --retry ann1",
     "--retry needs the task set"),
    ("annotations answer: unknown pair", "annotations answer --db {db} --pair nosuch --label 1",
     "no pair with id 'nosuch'"),
    ("annotations reliability: negative time floor", "annotations reliability --db {db} --time-floor -1",
     "must be 0 or more seconds"),
    ("annotations review: --limit 0", "annotations review --db {db} --limit 0", "must be 1 or more"),
    # the fifth hardening round (issue 53): values that used to trace back or pass silently
    ("annotations demo: check rate 1e-300", "annotations demo --db {t}/cr.db --annotators a --check-rate 1e-300",
     "check rate is a share between 0 and 1"),
    ("annotations demo: check rate 5e-324", "annotations demo --db {t}/cr.db --annotators a --check-rate 5e-324",
     "at least 0.001"),
    ("annotations round: check rate 1e-300", "annotations round --db {db} --task-set demo --check-rate 1e-300",
     "check rate is a share"),
    # issue 63: checks from an empty pool, an '@' after the server's address
    ("annotations round: checks over an empty pool", "annotations round --db {db} --task-set demo --check-rate 0.2",
     "no pool of gold checks"),
    ("annotations tasks: checks and no known answer",
     "annotations tasks --db {t}/pool.db --run {run} --n 4 --annotators a --check-rate 0.2",
     "no gold checks can be drawn"),
    ("answer: an @ in the server address's query",
     "answer --run {run} --generator openai:m@http://127.0.0.1:9/v1?x=@127.0.0.1:9 --out {t}/a.jsonl", "holds an '@'"),
    ("annotations demo: qualification of a billion",
     "annotations demo --db {t}/q.db --annotators a --qualification 1000000000 --simulate a=0.9",
     "qualification pairs must be 0 to 1000"),
    ("annotations demo: qualification over the known answers",
     "annotations demo --db {t}/q.db --annotators a --n 1500 --qualification 1000", "only 100 are outside"),
    ("annotations demo: qualification longer than the round",  # issue 63: exit 0, no word
     "annotations demo --db {t}/q.db --annotators a,b --n 40 --qualification 1000",
     "--qualification: 1000 qualification pairs for a round of 40 pairs"),
    ("annotations tasks: qualification longer than the round",
     "annotations tasks --db {t}/q.db --run {run} --n 5 --annotators a --qualification 6",
     "--qualification: 6 qualification pairs for a round of 5 pairs"),
    ("annotations tasks: qualification longer than the candidates",  # --n past them takes them all
     "annotations tasks --db {t}/q.db --run {run} --n 100000 --annotators a --qualification 1000",
     "--qualification: 1000 qualification pairs for a round of"),
    ("annotations round: qualification longer than the round",
     "annotations round --db {db} --task-set demo --qualification 7",
     "--qualification: 7 qualification pairs for a round of 6 pairs"),
    ("annotations demo: time floor 1e308", "annotations demo --db {t}/tf.db --annotators a --time-floor 1e308",
     "must be at most 3600 seconds"),
    ("annotations demo: time floor nan", "annotations demo --db {t}/tf.db --annotators a --time-floor nan",
     "must be 0 or more seconds"),
    ("annotations reliability: time floor nan", "annotations reliability --db {db} --time-floor nan",
     "must be 0 or more seconds"),
    ("annotations demo: a simulated annotator named twice",
     "annotations demo --db {t}/s.db --annotators a --simulate a=0.5,a=0.9", "a is named twice"),
    ("annotations demo: --simulate empty", "annotations demo --db {t}/s.db --annotators a --simulate=",
     "name at least one simulated annotator"),
    ("annotations demo: competence 1.5", "annotations demo --db {t}/s.db --annotators a --simulate a=1.5",
     "competence is between 0 and 1"),
    ("annotations demo: unknown kind", "annotations demo --db {t}/s.db --annotators a --simulate a=wizard",
     "spammer / gamer / strategic"),
    ("annotations demo: unknown simulated annotator", "annotations demo --db {t}/s.db --annotators a --simulate b=0.5",
     "'b' is not one of the round's annotators"),
    ("annotations demo: a spec with no =", "annotations demo --db {t}/s.db --annotators a --simulate a",
     "write NAME=COMPETENCE"),
    ("annotations demo: empty name", "annotations demo --db {t}/n.db --annotators a --name=", "a task set needs a name"),
    ("annotations demo: n over the demo", "annotations demo --db {t}/big.db --annotators a --n 100000",
     "the built-in demo has 1600 pairs"),
    ("annotations demo: a second demo of the same name", "annotations demo --db {db} --annotators ann1 --n 6",
     "a task set named 'demo' is already in"),
    ("annotations export: mace without redundancy", "annotations export --db {db} --what mace --out {t}/m.tsv",
     "need pairs labelled by two or more annotators"),
    ("annotations checks: unknown annotator", "annotations checks --db {db} --annotator nosuch",
     "no annotator named 'nosuch'"),
    ("annotations qualification: --retry an unknown annotator",
     "annotations qualification --db {db} --task-set demo --retry nosuch", "'nosuch' has no queue"),
    ("agreement: negative seed", "agreement --db {db} --seed -1", "must be 0 or more"),
    ("agreement: judge server down", "agreement --db {db} --judge openai:m@{dead}", "cannot reach the server"),
    ("annotations judge-failures: unknown judge", "annotations judge-failures --db {db} --judge nosuch",
     "no answers of a judge named 'nosuch'"),
    ("annotations health: no database", "annotations health --db {t}/none.db", "none.db"),
    ("agreement: no database", "agreement --db {t}/none.db", "none.db"),
    ("agreement --fit: a path as the name", "agreement --db {db} --fit ../x", "no path"),
    ("agreement --fit: unknown task set", "agreement --db {db} --fit lab1 --task-set nosuch",
     "task set 'nosuch' is not in"),
    ("agreement --fit: a base it cannot refit", "agreement --db {db} --fit lab1 --base argkp",
     "a lab refits embedded or embedded:v4"),
    ("agreement --fit: with --judge", "agreement --db {db} --fit lab1 --judge embedded", "--judge is not read"),
    ("agreement --fit: no fold seed", "agreement --db {db} --fit lab1 --fold-seeds 0", "must be 1 or more"),
    ("agreement --fit: the demo round is too small", "agreement --db {db} --fit lab1", "a fit needs at least"),
    ("judge: a lab judge that is not there", "judge --run {run} --judge lab:nosuch --out {t}/j.jsonl",
     "no such file"),
    ("users add: no database folder", "users add alice --role annotator --password-stdin --db {afile}/x.db",
     "afile", {"proc": True, "stdin": "a long enough passphrase 2026\n"}),
    ("users add: weak password", "users add alice --role annotator --password-stdin --db {t}/users.db",
     "at least 15 characters", {"proc": True, "stdin": "short\n"}),
    ("users list: no database", "users list --db {t}/none.db", "none.db"),
    ("users disable: unknown user", "users disable nosuch --db {db}", "no user 'nosuch'"),
    ("users enable: unknown user", "users enable nosuch --db {db}", "no user 'nosuch'"),
    ("users reset: unknown user", "users reset nosuch --password-stdin --db {db}", "no user 'nosuch'",
     {"proc": True, "stdin": "a long enough passphrase 2026\n"}),
    ("users audit: no database", "users audit --db {t}/none.db", "none.db"),
    ("models distill: no such source", "models distill --source {t}/nope", "not a local sentence-transformers folder"),
    ("models distill: too few dimensions", "models distill --dims 1", "must be between 2 and 4096"),
    ("models distill: --out a file", "models distill --out {afile}", "afile"),
    ("models distill: --out a folder that is no static model", "models distill --out {tinymodel}",
     "exists and is not a static model"),
    ("models list: an unknown option", "models list --source x", "unrecognized arguments"),
    # ---- generation and answers: servers named by specs are asked before any work
    ("answer: server down", "answer --run {run} --generator openai:m@{dead} --out {t}/a.jsonl", "cannot reach the server"),
    ("answer: an empty local folder as the adapter",
     "answer --run {run} --generator hf:{tinymodel}+{emptyadapter} --out {t}/a.jsonl",
     "the folder has no adapter_config.json"),
    ("answer: --out the run", "answer --run {run} --generator openai:m@{dead} --out {run}", "is the input --run"),
    ("answer: --out - with --json", "answer --run {run} --generator openai:m@{dead} --out - --json", "--json"),
    ("answer-eval: answers missing", "answer-eval --answers {t}/nope.jsonl --gold {gold}", "file not found"),
    ("answer-eval: nothing to compute", "answer-eval --answers {answers}", "nothing to compute"),
    ("answer-eval: --per-question a folder", "answer-eval --answers {answers} --per-question {folder}",
     "is a directory"),
    ("pd: server down", "pd --answers {answers} --model openai:m@{dead}", "cannot reach the server"),
    ("pd: --out a dangling link", "pd --answers {answers} --model openai:m@{dead} --out {dangling}", "dangling"),
    ("da: server down", "da --answers {answers} --model openai:m@{dead}", "cannot reach the server"),
    ("da: --out a folder", "da --answers {answers} --model openai:m@{dead} --out {folder}", "is a directory"),
    ("convincing: server down", "convincing --run {run} --gold {gold} --model openai:m@{dead} --out {t}/c.jsonl",
     "cannot reach the server"),
    ("discover: claims missing", "discover --claims {t}/nope.jsonl --pool {pool} --out {t}/p.jsonl", "file not found"),
    ("discover: --out the pool", "discover --claims {claims} --pool {pool} --out {pool}", "is the input --pool"),
    ("discover-eval: pred missing", "discover-eval --pred {t}/nope.jsonl --gold {t}/nope.json", "file not found"),
    ("leaning: run missing", "leaning --run {t}/nope.jsonl --gold {gold}", "file not found"),
    ("sycophancy: questions missing", "sycophancy --questions {t}/nope.jsonl --corpus {c} --retriever bm25 --gold {gold}",
     "file not found"),
    ("sycophancy: no labels", "sycophancy --questions {q} --corpus {c} --retriever bm25",
     "one of the arguments --gold --judge is required"),
]


def _argv(template: str, f: dict) -> list[str]:
    with_pair = dict(f)
    with_pair["pair"] = _a_pair(f["db"])
    return [part.format(**{k: str(v) for k, v in with_pair.items() if v is not None}) for part in template.split()]


def _a_pair(db) -> str:
    from berds_core.lab.store import Store

    with Store(db, create=False) as s:
        return s.pairs()[0].pair_id


def _one_line(err: str, fragment: str, case: str) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert lines, f"{case}: nothing on stderr"
    assert "Traceback" not in err, f"{case}: a traceback\n{err[-2000:]}"
    assert len(lines) == 1, f"{case}: {len(lines)} lines\n{err[-2000:]}"
    assert fragment in lines[0], f"{case}: {fragment!r} not in {lines[0]!r}"


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_is_one_line_exit_2(row, files, capsys, monkeypatch, tmp_path):
    case, template, fragment = row[:3]
    opts = row[3] if len(row) > 3 else {}
    need = opts.get("needs")
    if need and files.get(need) is None:
        pytest.skip(f"{need} cannot be made here")
    argv = _argv(template, files)
    if opts.get("proc"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), **opts.get("env", {})}
        env.pop("BERDS_RAY_ADDRESS", None) if "env" not in opts else None
        code = ("import sys; sys.modules['ray'] = None\n" if opts.get("no_ray") else "") + \
            "import sys\nfrom berds_core.cli import main\nsys.exit(main(sys.argv[1:]))\n"
        res = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300,
                             env=env, input=opts.get("stdin", ""), cwd=str(tmp_path))
        assert res.returncode == 2, f"{case}: exit {res.returncode}\n{res.stderr[-2000:]}"
        _one_line(res.stderr, fragment, case)
        return
    monkeypatch.delenv("BERDS_RAY_ADDRESS", raising=False)
    for k, v in opts.get("env", {}).items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own usage errors exit from parse_args
        code = e.code
    out, err = capsys.readouterr()
    assert code == 2, f"{case}: exit {code}\n{err[-2000:]}"
    _one_line(err, fragment, case)
    assert not (tmp_path / "-").exists()


def _leaves(parser, prefix=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, prefix + (name,))
            return
    yield " ".join(prefix)


def test_every_verb_has_a_row():
    verbs = set(_leaves(build_parser()))
    covered = {r[1].split()[0] if r[1].split()[0] not in ("annotations", "corpus", "users", "models")
               else " ".join(r[1].split()[:2]) for r in ROWS}
    assert verbs <= covered, f"verbs with no bad-input row: {sorted(verbs - covered)}"


def test_every_output_kind_has_rows():
    text = " ".join(r[1] for r in ROWS)
    for kind in ("--out {folder}", "--out {dangling}", "--out -", "--out {afile}", "--out-dir {afile}",
                 "--index-dir {afile}", "{immutable}", "--per-question {folder}", "--db {folder}"):
        assert kind in text, kind


@pytest.mark.parametrize("spec", ["a=1.5", "a=wizard", "b=0.5", "a", "", "a=0.5,a=0.9"])
def test_a_bad_simulation_leaves_no_database_behind(spec, tmp_path, capsys):
    db = tmp_path / "new.db"
    assert main(["annotations", "demo", "--db", str(db), "--annotators", "a", f"--simulate={spec}"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert main(["annotations", "demo", "--db", str(db), "--annotators", "a", "--qualification", "1000",
                 "--n", "1500"]) == 2  # refused after the database was opened: removed again
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    capsys.readouterr()


def test_a_refused_task_set_leaves_no_database_behind(files, tmp_path, capsys):
    """``annotations tasks`` (like ``demo``) removes a database it created when the task set is then refused;
    a database that was there before stays, unchanged."""
    argv = ["annotations", "tasks", "--run", str(files["run"]), "--n", "100", "--annotators", "a",
            "--qualification", "100"]
    assert main([*argv, "--db", str(tmp_path / "new.db")]) == 2
    assert "only 0 are outside the round's tasks" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    before = files["db"].read_bytes()
    assert main([*argv, "--db", str(files["db"])]) == 2
    assert files["db"].exists() and files["db"].read_bytes() == before
    capsys.readouterr()
