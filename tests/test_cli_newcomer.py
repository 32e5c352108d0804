"""A newcomer's bad inputs on the command line (issue 18): never silently wrong, never a traceback.

Subprocess tests: exit codes, one line on stderr naming file, line and field,
and no partial files left behind.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def berds(*argv, cwd=None, env=None, timeout=300):
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")  # this checkout's code
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "berds_core", *map(str, argv)], capture_output=True, text=True,
                          cwd=str(cwd or ROOT), env=full_env, timeout=timeout)


def one_error_line(res, *needles) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for n in needles:
        assert str(n) in lines[0], (n, lines[0])
    return lines[0]


def ctx(pid, score=1.0):
    return {"id": pid, "title": "", "text": f"text of {pid}", "score": score}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def evalfiles(tmp_path):
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": "q1", "question": "Q1?", "perspectives": ["A", "B"], "ctxs": [ctx("a"), ctx("b")]},
        {"id": "q2", "question": "Q2?", "perspectives": ["A", "B"], "ctxs": [ctx("c"), ctx("d")]},
        {"id": "q3", "question": "Q3?", "perspectives": ["A", "B"], "ctxs": [ctx("e"), ctx("f")]},
    ])
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"question_id": "q1", "passage_id": "a", "perspective": 0},
        {"question_id": "q1", "passage_id": "b", "perspective": 1},
        {"question_id": "q2", "passage_id": "c", "perspective": 0},
    ])  # q3 has no gold label at all
    return run, gold


# ------------------------------------------------------------------ 1. evaluate never silently wrong

def test_questions_without_gold_are_an_error_by_default(evalfiles):
    run, gold = evalfiles
    line = one_error_line(berds("evaluate", "--run", run, "--gold", gold, "--json"),
                          f"{run}:3:", "field 'id'", "'q3'", "1 of 3", "--missing-gold")
    assert "gold" in line


@pytest.mark.parametrize("policy, n, mrecall", [("skip", 2, (1 + 0) / 2), ("zero", 3, (1 + 0 + 0) / 3)])
def test_missing_gold_skip_or_zero_is_reported(evalfiles, policy, n, mrecall):
    run, gold = evalfiles
    res = berds("evaluate", "--run", run, "--gold", gold, "--k", 2, "--missing-gold", policy, "--json", "--quiet")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["n"] == n and out["mrecall"] == pytest.approx(mrecall)
    assert out["missing_gold"] == {"policy": policy, "count": 1, "ids": ["q3"]}


def test_complete_gold_reports_zero_missing(evalfiles):
    run, gold = evalfiles
    with open(gold, "a") as fh:
        fh.write(json.dumps({"question_id": "q3", "passage_id": "zz", "perspective": 1}) + "\n")
    out = json.loads(berds("evaluate", "--run", run, "--gold", gold, "--json", "--quiet").stdout)
    assert out["n"] == 3 and out["missing_gold"]["count"] == 0


def test_duplicate_question_ids_are_an_error(evalfiles, tmp_path):
    run, gold = evalfiles
    rows = [json.loads(x) for x in run.read_text().splitlines()]
    dup = write_jsonl(tmp_path / "dup.jsonl", rows + [rows[0]])
    one_error_line(berds("evaluate", "--run", dup, "--gold", gold, "--missing-gold", "zero"),
                   f"{dup}:4:", "field 'id'", "duplicate question id 'q1'", "line 1")


def test_gold_index_beyond_the_perspectives_is_an_error_even_for_unretrieved_passages(evalfiles):
    run, gold = evalfiles
    with open(gold, "a") as fh:  # line 4: a passage q2 did not retrieve, perspective 5 of 2
        fh.write(json.dumps({"question_id": "q2", "passage_id": "not-retrieved", "perspective": 5}) + "\n")
    one_error_line(berds("evaluate", "--run", run, "--gold", gold, "--missing-gold", "skip"),
                   f"{gold}:4:", "field 'perspective'", "index 5", "2 perspectives")


@pytest.mark.parametrize("score, shown", [("high", "not one"), (float("nan"), "finite"), (True, "bool"),
                                          (float("inf"), "finite")])
def test_bad_scores_are_an_error(evalfiles, tmp_path, score, shown):
    _, gold = evalfiles
    run = tmp_path / "bad.jsonl"
    rows = [{"id": "q1", "question": "Q1?", "perspectives": ["A", "B"], "ctxs": [ctx("a"), ctx("b", score)]}]
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))  # json writes NaN / Infinity
    one_error_line(berds("evaluate", "--run", run, "--gold", gold, "--missing-gold", "skip"),
                   f"{run}:1:", "field 'ctxs[1].score'", shown)


def test_numeric_string_scores_load_as_numbers(tmp_path):
    """The original BERDS / Contriever scripts write scores as strings: they stay loadable."""
    from berds_core.runs import read_run

    run = write_jsonl(tmp_path / "r.jsonl", [{"question": "Q?", "perspectives": ["A"],
                                              "ctxs": [{"text": "t", "score": "80.5"}, {"text": "u"}]}])
    (e,) = read_run(run)
    assert [c["score"] for c in e["ctxs"]] == [80.5, None]


# ------------------------------------------------------------------ 2. unwritable outputs, checked first

@contextlib.contextmanager
def read_only(folder: Path):
    """A folder nobody can write to, root included (chmod, plus the immutable flag when root)."""
    from berds_core.files.outputs import probe_writable

    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o555)
    immutable = False
    if probe_writable(folder) is None and os.geteuid() == 0 and shutil.which("chattr"):
        immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    try:
        if probe_writable(folder) is None:
            pytest.skip("cannot make a read-only folder here (root without chattr)")
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        os.chmod(folder, 0o755)


@pytest.fixture()
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    res = berds("import", "demo", "--out", d, "--json")
    assert res.returncode == 0, res.stderr
    return d


def _verbs(demo: Path, out: Path, run: Path):
    q, c = demo / "questions.jsonl", demo / "corpus.jsonl"
    return {
        "retrieve-bm25": ["retrieve", "--questions", q, "--corpus", c, "--k", 5, "--out", out / "run.jsonl"],
        "retrieve-dense": ["retrieve", "--questions", q, "--corpus", c, "--retriever", "dense", "--k", 5,
                           "--out", out / "run.jsonl"],
        "judge": ["judge", "--run", run, "--out", out / "judged.jsonl"],
        "import": ["import", "demo", "--out", out / "data"],
        "import-into": ["import", "demo", "--out", out],
    }


@pytest.mark.parametrize("verb", ["retrieve-bm25", "retrieve-dense", "judge", "import", "import-into"])
def test_read_only_out_is_refused_before_any_work(demo, tmp_path, verb):
    run = write_jsonl(tmp_path / "in.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["A"],
                                               "ctxs": [ctx("a")]}])
    cache = tmp_path / "cache"
    with read_only(tmp_path / "ro") as ro:
        argv = _verbs(demo, ro, run)[verb]
        line = one_error_line(berds(*argv, "--quiet", env={"BERDS_CACHE": str(cache)}, timeout=120),
                              "field '--out'", "not writable")
        assert str(ro) in line
        assert list(ro.iterdir()) == []  # no partial files
    # checked before any work: nothing was indexed, encoded or judged
    assert not (cache / "indexes").exists() and not (cache / "judges").exists()


@pytest.mark.parametrize("verb", ["retrieve-bm25", "judge"])
def test_out_naming_a_directory_is_refused(demo, tmp_path, verb):
    run = write_jsonl(tmp_path / "in.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["A"],
                                               "ctxs": [ctx("a")]}])
    target = tmp_path / "outdir"
    target.mkdir()
    argv = _verbs(demo, tmp_path, run)[verb]
    argv[argv.index("--out") + 1] = target
    one_error_line(berds(*argv, "--quiet", env={"BERDS_CACHE": str(tmp_path / "cache")}),
                   f"{target}:", "field '--out'", "is a directory")
    assert list(target.iterdir()) == []


def test_import_out_naming_a_file_is_refused(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("keep me\n")
    one_error_line(berds("import", "demo", "--out", f), "field '--out'", "not a folder")
    assert f.read_text() == "keep me\n"


def test_judge_eval_out_read_only(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("question\tid\tdocument\tperspective\tlabel\nQ?\t1\tSome passage.\tA view.\t1\n")
    with read_only(tmp_path / "ro") as ro:
        one_error_line(berds("judge-eval", "--pairs", pairs, "--out", ro / "scored.tsv",
                             env={"BERDS_CACHE": str(tmp_path / "cache")}), "field '--out'", "not writable")
        assert list(ro.iterdir()) == []


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_read_only_cache_names_the_cache_not_the_model(demo, tmp_path, retriever):
    with read_only(tmp_path / "cache") as cache:
        line = one_error_line(berds("retrieve", "--questions", demo / "questions.jsonl", "--corpus",
                                    demo / "corpus.jsonl", "--retriever", retriever, "--out", tmp_path / "run.jsonl",
                                    "--quiet", env={"BERDS_CACHE": str(cache)}, timeout=120),
                              "BERDS_CACHE", "not writable", str(cache))
        assert "--model" not in line and "embedder" not in line
    assert not (tmp_path / "run.jsonl").exists()


def test_unwritable_out_helpers_unit(tmp_path):
    from berds_core.errors import InputError
    from berds_core.files.outputs import check_output_dir, check_output_file

    assert check_output_file(tmp_path / "new" / "deeper" / "run.jsonl")  # folders still to be made: fine
    assert not (tmp_path / "new").exists()  # the check creates nothing
    f = tmp_path / "f.txt"
    f.write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        check_output_file(f / "run.jsonl")
    with pytest.raises(InputError, match="not a folder"):
        check_output_dir(f)
    assert check_output_dir(tmp_path / "new-dir") == tmp_path / "new-dir"


# ------------------------------------------------------------------ 8. the demo as files, README examples

def test_import_demo_writes_the_bundle(demo):
    from berds_core.datasets import load_demo, load_gold, load_questions

    b = load_demo()
    assert [q.id for q in load_questions(demo / "questions.jsonl")] == [q.id for q in b.questions]
    assert sum(1 for _ in open(demo / "corpus.jsonl")) == len(b.passages)
    assert load_gold(demo / "gold.jsonl") == b.gold
    assert berds("import", "demo", "extra-file", "--out", demo / "x").returncode == 2
    assert berds("import", "jsonl", "--out", demo / "x").returncode == 2


def readme_cli_commands(heading: str = "## The command line") -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    cmds, cur = [], ""
    for line in block.splitlines():
        line = line.split("  #", 1)[0].rstrip() if "  #" in line else line.rstrip()
        if not line.strip():
            continue
        cur += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            cmds.append(cur.strip())
            cur = ""
    return cmds


@pytest.mark.slow
def test_readme_command_line_examples_run_on_the_demo(tmp_path):
    """Every example of the README's command-line section runs as written, from an empty folder."""
    import shlex

    cmds = readme_cli_commands()
    assert len(cmds) >= 5 and all(c.startswith(".venv/bin/berds ") for c in cmds), cmds
    more = readme_cli_commands("## Beyond MRecall")  # the diversity examples read the runs made above
    assert len(more) == 3 and all(c.startswith(".venv/bin/berds ") for c in more), more
    cmds += more
    for cmd in cmds:
        argv = shlex.split(cmd)[1:]
        if argv[0] != "--help":
            argv.append("--quiet")
        res = berds(*argv, cwd=tmp_path, env={"BERDS_CACHE": str(tmp_path / ".cache")}, timeout=600)
        assert res.returncode == 0, (cmd, res.stderr[-2000:])


def test_readme_code_never_uses_a_bare_berds_command():
    """The README's install puts ``berds`` in .venv/bin, not on PATH: no code line may start with bare
    ``berds`` or ``python -m berds_core`` (``python`` need not exist either)."""
    text = (ROOT / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```bash")[1:]]
    lines = [ln.strip() for b in blocks for ln in b.splitlines()]
    assert any(ln.startswith(".venv/bin/berds ") for ln in lines)
    assert not [ln for ln in lines if ln.startswith(("berds ", "python -m berds_core"))]


def test_folder_outputs_of_the_newer_verbs_are_checked_first(demo, tmp_path):
    """``corpus web --out DIR`` and ``export-trec --out-dir DIR``: a read-only folder is one line, exit 2,
    before any search or scoring; ``corpus web`` takes an existing folder as its output."""
    run = write_jsonl(tmp_path / "run.jsonl", [{"id": "q", "question": "Q?", "perspectives": ["A"],
                                                "ctxs": [ctx("a")]}])
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"question_id": "q", "passage_id": "a", "perspective": 0}])
    env = {"BERDS_CACHE": str(tmp_path / "cache")}
    with read_only(tmp_path / "ro") as ro:
        one_error_line(berds("export-trec", "--run", run, "--gold", gold, "--out-dir", ro / "trec", env=env),
                       "field '--out-dir'", "not writable")
        one_error_line(berds("corpus", "web", "--questions", demo / "questions.jsonl", "--search",
                             "searxng:http://127.0.0.1:9", "--out", ro / "web", "--quiet", env=env),
                       "field '--out'", "not writable")
        assert list(ro.iterdir()) == []
    assert not (tmp_path / "cache" / "web").exists()  # nothing searched
    trec = tmp_path / "trec"
    res = berds("export-trec", "--run", run, "--gold", gold, "--out-dir", trec, env=env)
    assert res.returncode == 0, res.stderr
    assert (trec / "qrels.txt").exists()
    existing = tmp_path / "webout"  # an existing folder is a valid folder output (not "is a directory")
    existing.mkdir()
    res = berds("corpus", "web", "--questions", demo / "questions.jsonl", "--search", "searxng:http://127.0.0.1:9",
                "--out", existing, "--quiet", "--limit", "1", env=env)
    assert "field '--out'" not in res.stderr and "Traceback" not in res.stderr, res.stderr
