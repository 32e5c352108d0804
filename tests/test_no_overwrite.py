"""No output may overwrite an input (issue 24, item 1), and outputs are written atomically.

Every verb declares what it reads and writes (``berds_core.cli._parsing.declare``); the CLI refuses, before
any work, an output that is the same file as an input: the same path, a path that resolves to it, a
symbolic or a hard link. The table below names, for every verb that writes, each output and each file
input it can collide with; a meta-test keeps the table complete when verbs are added.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from berds_core.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
KEEP = '{"keep": "me"}\n'


def _files(tmp_path: Path, *names: str) -> dict[str, Path]:
    out = {}
    for n in names:
        p = tmp_path / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(KEEP)
        out[n] = p
    return out


# (case id, argv builder(tmp) -> (argv, the input that must survive, the input's flag))
def _cases():
    def retrieve(inp):
        def build(t):
            f = _files(t, "q.jsonl", "c.jsonl", "pool.jsonl")
            argv = ["retrieve", "--questions", f["q.jsonl"], "--corpus", f["c.jsonl"], "--out", f[inp]]
            if inp == "pool.jsonl":
                argv += ["--qe", "pool", "--pool", f["pool.jsonl"]]
            return argv, f[inp], {"q.jsonl": "--questions", "c.jsonl": "--corpus", "pool.jsonl": "--pool"}[inp]
        return build

    def simple(verb, flags, out_flag, inp_flag, extra=()):
        def build(t):
            names = {fl: f"in{fl.replace('-', '_')}.jsonl" for fl in flags}
            f = _files(t, *names.values())
            argv = list(verb)
            for fl in flags:
                argv += [fl, f[names[fl]]]
            argv += [out_flag, f[names[inp_flag]], *extra]
            return argv, f[names[inp_flag]], inp_flag
        return build

    def import_into(t):
        d = t / "data"
        f = _files(t, "data/questions.jsonl")
        return ["import", "jsonl", f["data/questions.jsonl"], "--out", d, "--force"], f["data/questions.jsonl"], "FILE"

    def import_pool(t):
        d = t / "data"
        f = _files(t, "src.json", "data/gold.jsonl")
        return (["import", "perspectrum", f["src.json"], "--pool", f["data/gold.jsonl"], "--out", d, "--force"],
                f["data/gold.jsonl"], "--pool")

    def corpus_web(t):
        snap = t / "snap"
        qfile = snap / "q1" / "passages.jsonl"  # the questions file where question q1's corpus would go
        qfile.parent.mkdir(parents=True)
        qfile.write_text(json.dumps({"id": "q1", "question": "Q?", "perspectives": ["A", "B"]}) + "\n")
        return (["corpus", "web", "--questions", qfile, "--search", "searxng:http://127.0.0.1:9", "--out", snap],
                qfile, "--questions")

    def answer_partial(t):
        f = _files(t, "answers.partial.jsonl")
        return (["answer", "--run", f["answers.partial.jsonl"], "--generator", "hf:x", "--out", t / "answers.jsonl"],
                f["answers.partial.jsonl"], "--run")

    def export_trec(t):
        out = t / "trec"
        f = _files(t, "run.jsonl", "trec/qrels.txt")
        return (["export-trec", "--run", f["run.jsonl"], "--gold", f["trec/qrels.txt"], "--out-dir", out],
                f["trec/qrels.txt"], "--gold")

    def export_trec_run(t):
        out = t / "trec"
        f = _files(t, "a/x.jsonl", "trec/x.run")  # run x.jsonl is written as trec/x.run
        trec_run = f["trec/x.run"]
        return (["export-trec", "--run", f["a/x.jsonl"], trec_run, "--labels", "j", "--out-dir", out], trec_run,
                "--run")

    def kpa_match(t):
        f = _files(t, "kp/arguments_dev.csv", "kp/key_points_dev.csv")
        return (["kpa-match", "--data", t / "kp", "--split", "dev", "--out", f["kp/arguments_dev.csv"]],
                f["kp/arguments_dev.csv"], "--data")

    def annotations_export(t):
        f = _files(t, "labels.db")
        return (["annotations", "export", "--db", f["labels.db"], "--out", f["labels.db"]], f["labels.db"], "--db")

    def annotations_export_default_db(t):
        db = t / "default.db"
        db.write_text(KEEP)
        os.environ["BERDS_ANNOTATIONS_DB"] = str(db)
        return ["annotations", "export", "--out", db], db, "--db"

    def models_distill(t):
        src = t / "src"
        f = _files(t, "src/config.json", "src/modules.json")
        return ["models", "distill", "--source", src, "--out", src], f["src/config.json"], "--source"

    return {  # case: (the verb, the builder)
        "retrieve-out-is-questions": ("retrieve", retrieve("q.jsonl")),
        "retrieve-out-is-corpus": ("retrieve", retrieve("c.jsonl")),
        "retrieve-out-is-pool": ("retrieve", retrieve("pool.jsonl")),
        "import-out-holds-file": ("import", import_into),
        "import-out-holds-pool": ("import", import_pool),
        "corpus-web-out-holds-questions": ("corpus web", corpus_web),
        "judge-out-is-run": ("judge", simple(["judge"], ["--run"], "--out", "--run")),
        "judge-eval-out-is-pairs": ("judge-eval", simple(["judge-eval"], ["--pairs"], "--out", "--pairs")),
        "kpa-match-out-is-its-arguments": ("kpa-match", kpa_match),
        "answer-out-is-run": ("answer", simple(["answer", "--generator", "hf:x"], ["--run"], "--out", "--run")),
        "answer-partial-is-run": ("answer", answer_partial),
        "answer-eval-per-question-is-answers": ("answer-eval", simple(["answer-eval", "--judge", "embedded"],
                                                                      ["--answers"], "--per-question", "--answers")),
        "answer-eval-per-question-is-questions": ("answer-eval", simple(["answer-eval", "--judge", "embedded"],
                                                                        ["--answers", "--questions"], "--per-question",
                                                                        "--questions")),
        "answer-eval-per-question-is-gold": ("answer-eval", simple(["answer-eval"], ["--answers", "--gold"],
                                                                   "--per-question", "--gold")),
        "pd-out-is-answers": ("pd", simple(["pd", "--model", "hf:x"], ["--answers"], "--out", "--answers")),
        "pd-out-is-questions": ("pd", simple(["pd", "--model", "hf:x"], ["--answers", "--questions"], "--out",
                                             "--questions")),
        "da-out-is-answers": ("da", simple(["da", "--model", "hf:x"], ["--answers"], "--out", "--answers")),
        "da-out-is-questions": ("da", simple(["da", "--model", "hf:x"], ["--answers", "--questions"], "--out",
                                             "--questions")),
        "convincing-out-is-run": ("convincing", simple(["convincing", "--model", "hf:x"], ["--run"], "--out", "--run")),
        "convincing-out-is-data": ("convincing", simple(["convincing", "--model", "hf:x"], ["--data"], "--out",
                                                        "--data")),
        "convincing-out-is-gold": ("convincing", simple(["convincing", "--model", "hf:x"], ["--run", "--gold"],
                                                        "--out", "--gold")),
        "discover-out-is-claims": ("discover", simple(["discover"], ["--claims", "--pool"], "--out", "--claims")),
        "discover-out-is-pool": ("discover", simple(["discover"], ["--claims", "--pool"], "--out", "--pool")),
        "export-trec-qrels-is-gold": ("export-trec", export_trec),
        "export-trec-run-file-is-a-run": ("export-trec", export_trec_run),
        "annotations-export-out-is-db": ("annotations export", annotations_export),
        "annotations-export-out-is-default-db": ("annotations export", annotations_export_default_db),
        "models-distill-out-is-its-source": ("models distill", models_distill),
    }


CASES = _cases()


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("BERDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BERDS_ANNOTATIONS_DB", raising=False)
    yield
    os.environ.pop("BERDS_ANNOTATIONS_DB", None)


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_output_that_is_an_input_is_refused(case, tmp_path, capsys):
    argv, survivor, flag = CASES[case][1](tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "cache" not in p.parts)
    content = survivor.read_bytes()
    assert main([str(a) for a in argv] + ["--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert f"is the input {flag}" in err[0] and "choose another output path" in err[0], err[0]
    assert survivor.read_bytes() == content
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "cache" not in p.parts)
    assert after == before  # nothing written, nothing made
    assert not (tmp_path / "cache" / "indexes").exists()  # refused before any work


def test_links_to_an_input_are_refused(tmp_path, capsys):
    f = _files(tmp_path, "q.jsonl", "c.jsonl")
    (tmp_path / "hard.jsonl").hardlink_to(f["c.jsonl"])
    (tmp_path / "soft.jsonl").symlink_to(f["q.jsonl"])
    (tmp_path / "sub").mkdir()
    for out, flag in ((tmp_path / "hard.jsonl", "--corpus"), (tmp_path / "soft.jsonl", "--questions"),
                      (tmp_path / "sub" / ".." / "c.jsonl", "--corpus")):
        assert main(["retrieve", "--questions", str(f["q.jsonl"]), "--corpus", str(f["c.jsonl"]), "--out", str(out),
                     "--quiet"]) == 2
        assert f"is the input {flag}" in capsys.readouterr().err
    assert f["q.jsonl"].read_text() == KEEP and f["c.jsonl"].read_text() == KEEP


def test_a_distinct_output_beside_the_inputs_still_works(tmp_path, capsys):
    """The check refuses only the same file: a run written next to its inputs is fine."""
    from berds_core.datasets import load_demo

    assert main(["import", "demo", "--out", str(tmp_path / "d"), "--quiet"]) == 0
    d = tmp_path / "d"
    assert main(["retrieve", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                 "--k", "3", "--out", str(d / "run.jsonl"), "--quiet", "--json"]) == 0
    assert sum(1 for _ in open(d / "run.jsonl")) == len(load_demo().questions)


def _leaves(parser, prefix=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, prefix + (name,))
            return
    yield " ".join(prefix), parser


OUTPUT_DESTS = {"out", "out_dir", "per_question"}
UNDECLARED = {"users add", "users list", "users disable", "users enable", "users reset", "users audit"}
# ^ lab accounts (issue 25's module): they name no file to read or write


def test_every_verb_declares_its_files_and_every_writer_is_tested():
    from berds_core.files.outputs import VerbFiles

    writers = set()
    for name, parser in _leaves(build_parser()):
        vf = parser.get_default("files")
        if name in UNDECLARED:
            continue
        assert isinstance(vf, VerbFiles), f"berds {name} declares no files (berds_core.cli._parsing.declare)"
        dests = {a.dest for a in parser._actions if a.option_strings and a.nargs != 0}
        undeclared = (dests & OUTPUT_DESTS) - set(vf.outputs) - set(vf.out_dirs)
        assert not undeclared, f"berds {name}: output option {undeclared} is not declared"
        if vf.writes():
            writers.add(name)
    tested = {verb for verb, _ in CASES.values()}
    assert writers <= tested, f"verbs that write but have no overwrite test: {sorted(writers - tested)}"


# --------------------------------------------------------------------------- atomic writes


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path):
    from berds_core.files.jsonio import write_jsonl

    target = tmp_path / "run.jsonl"
    target.write_text(KEEP)

    def rows():
        for i in range(1000):
            if i == 500:
                raise KeyboardInterrupt  # Ctrl-C halfway
            yield {"i": i, "text": "x" * 100}

    with pytest.raises(KeyboardInterrupt):
        write_jsonl(target, rows())
    assert target.read_text() == KEEP
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]  # no temporary file left


def test_atomic_write_survives_a_killed_process(tmp_path):
    """A process killed (SIGKILL: no handler, no clean-up) in the middle of writing leaves the old file whole."""
    target = tmp_path / "run.jsonl"
    target.write_text(KEEP)
    code = f"""
import os, signal, sys
sys.path.insert(0, {str(ROOT)!r})
from berds_core.files.jsonio import write_jsonl
def rows():
    for i in range(100000):
        if i == 5000:
            os.kill(os.getpid(), signal.SIGKILL)
        yield {{"i": i, "text": "x" * 100}}
write_jsonl({str(target)!r}, rows())
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert res.returncode == -signal.SIGKILL
    assert target.read_text() == KEEP
    leftovers = [p for p in tmp_path.iterdir() if p.name != "run.jsonl"]
    assert all(p.name.startswith(".run.jsonl.") and p.name.endswith(".tmp") for p in leftovers), leftovers


@pytest.fixture()
def crash_on_write(monkeypatch):
    """Once armed, every file opened by ``atomic_write`` dies (as Ctrl-C would) after its first write."""
    import berds_core.files.jsonio as jsonio

    real_fdopen = os.fdopen

    def fdopen(fd, mode="r", *a, **k):
        fh = real_fdopen(fd, mode, *a, **k)
        writes = {"n": 0}
        real_write = fh.write

        def write(data):
            writes["n"] += 1
            if writes["n"] > 1:
                raise KeyboardInterrupt
            return real_write(data)

        fh.write = write
        return fh

    return lambda: monkeypatch.setattr(jsonio.os, "fdopen", fdopen)


def _demo(tmp_path) -> Path:
    d = tmp_path / "d"
    assert main(["import", "demo", "--out", str(d), "--quiet"]) == 0
    return d


def _verb_argvs(d: Path, tmp_path: Path) -> dict:
    run = tmp_path / "in-run.jsonl"
    assert main(["retrieve", "--questions", str(d / "questions.jsonl"), "--corpus", str(d / "corpus.jsonl"),
                 "--k", "2", "--out", str(run), "--quiet"]) == 0
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\t1\tSome passage.\tA view.\t1\n"
                     "Q?\t2\tOther passage.\tA view.\t0\n")
    return {
        "retrieve": (["retrieve", "--questions", d / "questions.jsonl", "--corpus", d / "corpus.jsonl", "--k", "3",
                      "--out"], "out.jsonl"),
        "import": (["import", "demo", "--force", "--out"], "questions.jsonl"),
        "judge": (["judge", "--run", run, "--out"], "out.jsonl"),
        "judge-eval": (["judge-eval", "--pairs", pairs, "--out"], "out.tsv"),
        "export-trec": (["export-trec", "--run", run, "--gold", d / "gold.jsonl", "--out-dir"], "in-run.run"),
    }


@pytest.mark.parametrize("verb", ["retrieve", "import", "judge", "judge-eval", "export-trec"])
def test_a_verb_interrupted_while_writing_leaves_the_old_output(verb, tmp_path, crash_on_write, capsys):
    d = _demo(tmp_path)
    prefix, name = _verb_argvs(d, tmp_path)[verb]
    target_dir = tmp_path / "outdir"
    target_dir.mkdir()
    old = target_dir / name
    old.write_text(KEEP)
    out = target_dir if prefix[-1] in ("--out-dir",) or prefix[0] == "import" else old
    args = [str(a) for a in prefix] + [str(out), "--quiet"]
    crash_on_write()
    assert main(args) == 130  # interrupted
    assert old.read_text() == KEEP  # the good file is still there, whole
    assert not [p for p in target_dir.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


def test_no_module_writes_a_file_in_place():
    """Outputs go through ``jsonio.atomic_write`` (temp file + rename); the exceptions are named here."""
    import re

    allowed = {
        "berds_core/files/jsonio.py": "atomic_write itself",
        "berds_core/web/snapshot.py": "append_log: an append-only journal, a torn last line is ignored on reading",
        "berds_core/retrieval/bm25.py": "index metadata written inside a temporary folder renamed into place",
        "berds_core/retrieval/tantivy_bm25.py": "index metadata written inside a temporary folder renamed into place",
        "berds_core/retrieval/faiss_build.py": "docid and berds.json written inside a temporary folder renamed into place",
        "berds_core/corpora/disk.py": "the manifest written inside a temporary folder renamed into place",
        "berds_core/files/shard_files.py": "each shard and its .json written to a temporary file, then renamed",
        "berds_core/distributed/search.py": "each BM25 shard written to a temporary file, then committed by rename",
    }
    pattern = re.compile(r"""open\([^)]*,\s*["'][wax]b?\+?["']|\.write_text\(|\.write_bytes\(""")
    found = []
    for path in sorted((ROOT / "berds_core").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and rel not in allowed:
                found.append(f"{rel}:{no}: {line.strip()}")
    assert not found, "files written in place (use berds_core.files.jsonio.atomic_write):\n" + "\n".join(found)
