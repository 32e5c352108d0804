"""Text that describes a pipeline or a figure is printed from the spec or the stored report, never typed beside
it (issue 37): the preset's caption, Evaluate's labels, the README's demo and judge tables."""
import importlib.util
import re
from pathlib import Path

import pytest

from berds_core.diversify import as_pipeline, get_preset

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _block(name: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert m, f"README.md lacks the {name} block"
    return m.group(1).rstrip("\n")


def test_pipeline_descriptions_come_from_their_parts():
    p = get_preset("diverse")
    text = p.describe()
    assert text.startswith(f"{p.retriever} top {p.depth}, then ")
    for key, value in p.stages[-1].args():
        assert f"{key}={value}" in text
    assert as_pipeline("none").describe("bm25") == "bm25's own ranking"
    assert "lam=0.5" in as_pipeline("mmr(lam=0.5)").describe("dense") and "dense top 100" in \
        as_pipeline("mmr(lam=0.5)").describe("dense")


def test_evaluate_labels_the_preset_by_its_saved_pipeline():
    from berds_core.studio.columns import column_pipeline, method_label

    label = method_label("bm25", "preset", column_pipeline("preset"), "gold")
    assert str(get_preset("diverse")) in label and not label.startswith("bm25")  # the preset retrieves with dense
    assert method_label("bm25", "mmr", column_pipeline("mmr", 0.5), "gold") == "bm25 + MMR λ=0.50 · gold"
    assert method_label("bm25", "mmr", column_pipeline("mmr"), "gold") == "bm25 + MMR λ=0.75 · gold"  # its default
    assert method_label("dense", "xquad", column_pipeline("xquad", None, "offline"), "judge, threshold") == \
        "dense + xQuAD (offline) · judge, threshold"
    assert method_label("dense", "none", column_pipeline("none"), "gold") == "dense plain retrieval · gold"


def test_readme_judge_table_is_the_stored_report():
    assert _block("judge-table") == _bench("demo_table").judge_markdown()


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]


def _close(written: str, measured: str) -> bool:
    """One cell: labels and "-" exactly; "a / b" figures within 0.02 each; "n of m" counts within one."""
    nums_w, nums_m = re.findall(r"-?\d+(?:\.\d+)?", written), re.findall(r"-?\d+(?:\.\d+)?", measured)
    if not nums_w or re.sub(r"[\d.]+", "#", written) != re.sub(r"[\d.]+", "#", measured) or len(nums_w) != len(nums_m):
        return written == measured
    if " of " in written:
        return abs(int(nums_w[0]) - int(nums_m[0])) <= 1 and nums_w[1] == nums_m[1]
    return all(abs(float(a) - float(b)) <= 0.02 + 1e-9 for a, b in zip(nums_w, nums_m))


@pytest.mark.slow
def test_readme_demo_table_is_what_the_commands_give(tmp_path):
    # dense rankings go through fp32 encodings (issue 52: the reference on every CPU; the bf16 ones that
    # wrote earlier tables moved PM-2's dense P@5 from 0.80 to 0.81 between two Zen 4 machines), whose last
    # bits still depend on the kernels: labels must match exactly, figures to 0.02, counts to one.
    bench = _bench("demo_table")
    written, measured = _cells(_block("demo-table")), _cells(bench.demo_markdown(bench.demo_rows(tmp_path)))
    assert len(written) == len(measured)
    for row_w, row_m in zip(written, measured):
        assert len(row_w) == len(row_m) and all(_close(a, b) for a, b in zip(row_w, row_m)), (row_w, row_m)


def test_the_demo_table_comparison_tells_a_wrong_figure_from_a_rounding_one():
    assert _close("0.43 / 0.80", "0.43 / 0.81") and _close("8 of 14", "9 of 14") and _close("-", "-")
    assert not _close("0.43 / 0.80", "0.43 / 0.85") and not _close("8 of 14", "10 of 14")
    assert not _close("plain retrieval", "MMR") and not _close("0.43 / 0.80", "-")


def test_judge_help_says_what_the_embedded_judge_measures():
    """`berds judge --help` describes the embedded judge as the code does (issue 54: it called it the "offline
    stance model", which it no longer is)."""
    import subprocess
    import sys

    from berds_core.judges import describe_judge

    r = subprocess.run([sys.executable, "-m", "berds_core", "judge", "--help"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    start = text.index("embedded (")
    embedded = text[start:text.index(") |", start) + 1]  # the embedded judge's own bracket (help wraps at hyphens)
    assert "stance model" not in embedded
    assert describe_judge("embedded")["stance"] is False and "cannot tell for from against" in embedded
