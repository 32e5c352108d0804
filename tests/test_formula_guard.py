"""A carriage return or a line feed inside a cell does not defeat the formula guard (issue 38, item 2).

The exported bytes are read the way a spreadsheet reads them (:func:`spreadsheet_cells`): records end at
``\\r``, ``\\n`` or ``\\r\\n`` outside quotes, a quoted field runs to its closing quote (``""`` inside is a
quote). Then no cell may start with ``= + - @``, a tab or a carriage return (plain numbers aside), and no
line inside a cell either (a reader that splits a cell at its line breaks still finds no formula).
"""
from __future__ import annotations

import re
import subprocess
import os
import sys
from pathlib import Path

import pytest

from berds_core.cli import main
from berds_core.files.spreadsheet import delimited, neutralise, unneutralise
from berds_core.lab.exports import EXPORT_COLUMNS, export_rows, to_csv, to_tsv
from berds_core.lab.store import Pair, Store
from berds_core.lab.tasks import read_pairs_tsv

ROOT = Path(__file__).resolve().parents[1]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
NOTE = "ok\r=cmd|' /C calc'!A0\r=HYPERLINK(\"http://evil.example/\",\"x\")\n+SUM(1)\r\n@A1\n\t=2"


def spreadsheet_cells(data: bytes, delimiter: str) -> list[list[str]]:
    """Records and cells as a spreadsheet's CSV import splits them (RFC 4180 plus bare CR and LF)."""
    text = data.decode("utf-8")
    rows, row, cell, i, quoted = [], [], [], 0, False
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == '"':
                if text[i + 1:i + 2] == '"':
                    cell.append('"')
                    i += 1
                else:
                    quoted = False
            else:
                cell.append(ch)
        elif ch == '"' and not cell:
            quoted = True
        elif ch == delimiter:
            row.append("".join(cell))
            cell = []
        elif ch in "\r\n":
            row.append("".join(cell))
            rows.append(row)
            row, cell = [], []
            if ch == "\r" and text[i + 1:i + 2] == "\n":
                i += 1
        else:
            cell.append(ch)
        i += 1
    if cell or row:
        row.append("".join(cell))
        rows.append(row)
    return rows


def live_formulas(data: bytes, delimiter: str) -> list[str]:
    """Cells (and lines inside cells) a spreadsheet would run."""
    bad = []
    for row in spreadsheet_cells(data, delimiter):
        for cell in row:
            if cell.startswith(TRIGGERS) and not NUMBER.fullmatch(cell):
                bad.append(cell)
            for line in re.split(r"\r\n|\r|\n", cell)[1:]:
                if line.startswith(TRIGGERS) and not NUMBER.fullmatch(line):
                    bad.append(line)
    return bad


def test_the_reader_finds_the_formulas_of_the_old_writer():
    """The reader is not blind: csv.writer(lineterminator='\\n') with a first-character guard gave live cells."""
    import csv
    import io

    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\n").writerow(["a", "'" + NOTE if NOTE[0] in TRIGGERS else NOTE])
    assert len(live_formulas(buf.getvalue().encode(), ",")) >= 2


def test_cr_and_lf_inside_a_cell_are_quoted_and_every_line_is_guarded():
    for delim in (",", "\t"):
        data = delimited([{"note": NOTE, "n": -0.25}], ["note", "n"], delim).encode()
        assert live_formulas(data, delim) == []
        rows = spreadsheet_cells(data, delim)
        assert len(rows) == 2 and rows[1][1] == "-0.25"  # one record: the note did not split it
        assert unneutralise(rows[1][0]) == NOTE


@pytest.mark.parametrize("value", [NOTE, "\r=x", "\n\n=x", "'a\r'b", "x\r\n-1", "=a\r\n\r\n", "a\rb", "",
                                   "-0.5", "ok", "\t", "\r", "\r\n"])
def test_the_guard_is_undone_exactly(value):
    assert unneutralise(neutralise(value)) == value
    assert not neutralise(value).startswith(TRIGGERS) or NUMBER.fullmatch(value)


def _db(tmp_path) -> Path:
    db = tmp_path / "lab.db"
    with Store(db) as s:
        s.add_pairs([Pair("p1", "Q?", "A passage\r=1+1", "A view.\n@SUM(1)"), Pair("p2", "Q2?", "B.", "V.")])
        s.tasks.create("t", {"ann": ["p1", "p2"]})
    return db


def test_cli_export_csv_and_tsv_with_a_hostile_note(tmp_path, capsys):
    db = _db(tmp_path)
    assert main(["annotations", "label", "--db", str(db), "--annotator", "ann", "--pair", "p1", "--label", "1",
                 "--note", NOTE]) == 0
    for fmt, delim in (("csv", ","), ("tsv", "\t")):
        out = tmp_path / f"labels.{fmt}"
        assert main(["annotations", "export", "--db", str(db), "--format", fmt, "--out", str(out)]) == 0
        data = out.read_bytes()
        assert live_formulas(data, delim) == [], fmt
        assert len(spreadsheet_cells(data, delim)) == 2  # header + one label: no record was split
    back = {p.pair_id: (p.document, p.perspective) for _, p, _ in read_pairs_tsv(tmp_path / "labels.tsv")}
    assert back["p1"] == ("A passage\r=1+1", "A view.\n@SUM(1)")  # read back exactly
    capsys.readouterr()


def test_in_app_csv_downloads_are_guarded(tmp_path):
    """Admin -> Exports, Agreement -> Labels and the pages' tables use these writers."""
    db = _db(tmp_path)
    with Store(db) as s:
        s.label("ann", "p1", 1, note=NOTE)
        rows = export_rows(s)
    for text, delim in ((to_csv(rows, EXPORT_COLUMNS), ","), (to_csv(rows), ","), (to_tsv(rows), "\t"),
                        (to_csv([{"question": NOTE, "mrecall@5": 0.5}]), ",")):
        assert live_formulas(text.encode(), delim) == []


@pytest.mark.slow
def test_judge_eval_out_tsv_is_guarded(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    hostile = '"=HYPERLINK(""http://evil.example/"",""x"")"'
    pairs.write_text("question\tid\tdocument\tperspective\tlabel\n"
                     f"{hostile}\t=1\t+cmd|' /C calc'!A0\t@SUM(1)\t1\n"
                     f"Q?\t2\t\"ok\r=2+2\"\tA view.\t0\n", newline="")
    out = tmp_path / "judged.tsv"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "berds_core", "judge-eval", "--pairs", str(pairs), "--out", str(out),
                          "--quiet"], capture_output=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr.decode()
    data = out.read_bytes()
    assert live_formulas(data, "\t") == []
    rows = spreadsheet_cells(data, "\t")
    assert len(rows) == 3 and rows[0][-2:] == ["probability", "prediction"]


def test_streamlit_grid_download_is_off():
    """Streamlit's own "Download as CSV" on st.dataframe writes cells unguarded: the app turns it off (the
    pages offer the project's guarded CSV instead)."""
    import tomllib

    conf = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert conf["client"]["disableDataExport"] is True


@pytest.mark.browser
@pytest.mark.slow
def test_tables_offer_no_unguarded_csv_download_in_a_real_browser(tmp_path):
    """The app's config (run from the project folder) leaves a table's toolbar without "Download as CSV";
    Streamlit's default would offer it (checked in the same test, so the check can fail)."""
    from browser_harness import chromium_page, skip_reason, streamlit_server, wait_for_app

    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    script = tmp_path / "table.py"
    script.write_text("import pandas as pd\nimport streamlit as st\n"
                      "st.dataframe(pd.DataFrame({'note': ['=HYPERLINK(\"http://evil.example\",\"x\")'], 'n': [1]}))\n")

    def buttons(env) -> list[str]:
        with streamlit_server(script, env=env) as url, chromium_page() as page:
            page.goto(url)
            wait_for_app(page)
            page.locator('[data-testid="stDataFrame"]').hover()
            page.locator('[data-testid="stElementToolbar"]').wait_for(timeout=30_000)
            return page.locator('[data-testid="stElementToolbar"] button').evaluate_all(
                "bs => bs.map(b => b.getAttribute('aria-label'))")

    ours = buttons({})
    assert "Download as CSV" not in ours and "Search" in ours
    assert "Download as CSV" in buttons({"STREAMLIT_CLIENT_DISABLE_DATA_EXPORT": "false"})
