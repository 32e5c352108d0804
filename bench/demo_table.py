"""The README's demo table and judge table, regenerated from what the code does (never typed by hand).

    python bench/demo_table.py [--write-readme] [--json]

**Demo table.** The built-in demo as a user runs it from the README: ``berds import demo``, then for each
method ``berds retrieve --corpus-per-question demo/corpora`` (each question retrieves from its own pool, as
BERDS's web setting) with BM25 and with dense, and ``berds evaluate --gold demo/gold.jsonl --k 5``: MRecall@5
and Precision@5 by the gold labels, and how many of the 14 questions each configuration leaves without every
perspective in its top 5. Every command runs as a subprocess of this Python, exactly as typed.

**Judge table.** The embedded judge's out-of-fold figures as ``scripts/train_judge.py`` stored them in its
weights (``berds_core/judges/weights/embedded_v5.npz``), beside the earlier judges under the same protocol.

``--write-readme`` replaces the text between ``<!-- demo-table:begin -->`` / ``<!-- demo-table:end -->`` and
``<!-- judge-table:begin -->`` / ``<!-- judge-table:end -->`` in README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (row label, retrieve options); the preset retrieves with its own retriever (dense)
METHODS = [
    ("plain retrieval", []),
    ("MMR (λ 0.75)", ["--pipeline", "mmr(lam=0.75)"]),
    ("query expansion (the dataset's generated perspectives)", ["--pipeline", "qe(source=dataset)"]),
    ("coverage re-ranker (generated perspectives)", ["--pipeline", "coverage(source=dataset)"]),
    ("xQuAD (generated perspectives)", ["--pipeline", "xquad(source=dataset)"]),
    ("PM-2 (generated perspectives)", ["--pipeline", "pm2(source=dataset)"]),
    ("Diverse preset", ["--preset", "diverse"]),
]
from berds_core.retrieval import READY_RETRIEVERS as RETRIEVERS  # noqa: E402 (after the path): bm25, dense


def berds(*argv, cwd) -> dict:
    out = subprocess.run([sys.executable, "-m", "berds_core", *map(str, argv), "--json"], cwd=cwd,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode != 0:
        raise SystemExit(f"berds {' '.join(map(str, argv))}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout)


def demo_rows(work: Path) -> list[dict]:
    berds("import", "demo", "--out", "demo", "--force", cwd=work)
    rows = []
    for label, opts in METHODS:
        row = {"method": label}
        for kind in RETRIEVERS:
            if opts[:1] == ["--preset"] and kind == "bm25":
                continue
            run = f"runs/{kind}-{len(rows)}.jsonl"
            (work / "runs").mkdir(exist_ok=True)
            berds("retrieve", "--questions", "demo/questions.jsonl", "--corpus-per-question", "demo/corpora",
                  "--retriever", kind, "--k", 10, "--out", run, "--quiet", *opts, cwd=work)
            ev = berds("evaluate", "--run", run, "--gold", "demo/gold.jsonl", "--k", 5, "--per-question", cwd=work)
            row[kind] = {"mrecall@5": ev["mrecall"], "precision@5": ev["precision"], "n": ev["n"],
                         "not_covered": sum(1 for q in ev["per_question"] if q["mrecall@5"] < 1)}
        rows.append(row)
    return rows


def demo_markdown(rows: list[dict]) -> str:
    out = ["| method | BM25: MRecall@5 / P@5 | not fully covered | dense: MRecall@5 / P@5 | not fully covered |",
           "|---|---|---|---|---|"]
    for r in rows:
        cells = []
        for kind in RETRIEVERS:
            m = r.get(kind)
            cells += (["-", "-"] if m is None else
                      [f"{m['mrecall@5']:.2f} / {m['precision@5']:.2f}", f"{m['not_covered']} of {m['n']}"])
        out.append(f"| {r['method']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _median(seeds: list, key: str) -> float:
    import statistics

    return statistics.median(s[key] for s in seeds)


RULE_NAMES = {"pairwise": "each pair alone (v4's rule, refitted on the units)",
              "closer": "the closer member keeps its label (v4's probabilities, no stance)",
              "stance-2": "the side the stance model reads (both members read, the affirmative's prior)"}


def judge_markdown() -> str:
    """The README's judge table, printed from the shipped weights' out-of-fold report (v5: medians over the
    fold assignments, seed 0 in brackets)."""
    from berds_core.judges.embedded import WEIGHTS, load_head

    meta = load_head(str(WEIGHTS))
    oof, rule = meta["oof"], meta["one_side"]
    j, med, v4 = oof["judge"], oof["median"], oof["v4"]
    v40 = v4["seeds"][0]
    rows = ["| judge (BERDS human pairs, dev half: 276 pairs, 15 questions, out of fold; median over 5 fold "
            "assignments, seed 0 in brackets) | F1 | kappa | calibration error | says \"supports\" |",
            "|---|---|---|---|---|",
            f"| **embedded v5** (shipped: a passage counts for at most one of two opposite perspectives, the side "
            f"the stance model reads; calibrated cosine, topicality gate) | **{med['f1']:.3f}** ({j['f1']:.3f}) | "
            f"**{med['kappa']:.3f}** ({j['kappa']:.3f}) | **{med['ece']:.3f}** ({j['ece']:.3f}) | "
            f"{med['positive_rate']:.1%} ({j['positive_rate']:.1%}) |",
            f"| embedded v4 (each pair alone: the judge main shipped before), same folds | {v4['median']['f1']:.3f} "
            f"({v40['f1']:.3f}) | {v4['median']['kappa']:.3f} ({v40['kappa']:.3f}) | {v4['median']['ece']:.3f} "
            f"({v40['ece']:.3f}) | {v4['median']['positive_rate']:.1%} ({v40['positive_rate']:.1%}) |"]
    for name, r in oof["forced"].items():
        if name != rule["rule"]:
            rows.append(f"| candidate: {RULE_NAMES.get(name, name)}, not chosen | {r['f1']:.3f} "
                        f"({r['seed0']['f1']:.3f}) | {r['kappa']:.3f} ({r['seed0']['kappa']:.3f}) | {r['ece']:.3f} | "
                        f"{r['positive_rate']:.1%} |")
    from berds_core.judges.cross_encoder import HEAD_WEIGHTS

    ce = load_head(str(HEAD_WEIGHTS))["oof"] if HEAD_WEIGHTS.exists() else None
    if ce:
        a = ce["judge"]
        seeds = ce.get("fold_seeds") or []
        m = (f"{_median(seeds, 'f1'):.3f} ({a['f1']:.3f}) | {_median(seeds, 'kappa'):.3f} ({a['kappa']:.3f})"
             if seeds else f"({a['f1']:.3f}) | ({a['kappa']:.3f})")
        rows.append(f"| argkp (`--judge argkp`, not the default: ArgKP cross-encoder logit + cosine, each pair alone, "
                    f"docs/judge.md) | {m} | ({a['ece']:.3f}) | - |")
    for name, r in oof["recorded"].items():
        rows.append(f"| {name}, as recorded (seed 0) | ({r['f1']:.3f}) | ({r['kappa']:.3f}) | - | - |")
    rows.append("")
    folds = [r for s in oof["fold_seeds"] for r in s["rules"]]
    rows.append(f"People say \"supports\" to {j['human_rate']:.1%} of these pairs. The rule chosen on all folds, and "
                f"in {folds.count(rule['rule'])} of the {len(folds)} held-out folds: "
                f"{RULE_NAMES.get(rule['rule'], rule['rule'])} (threshold {rule['threshold']:.3f}, "
                f"unsure band [{rule['band'][0]:.3f}, {rule['band'][1]:.3f}); pairs outside a group keep v4's "
                f"threshold {meta['threshold']:.3f} and band [{meta['band'][0]:.3f}, {meta['band'][1]:.3f})). Unsure: "
                f"{med['unsure_share']:.0%} of pairs (median). The side reads are out of fold: "
                f"{oof['stance_reads']}. Trained {meta.get('trained', '?')} by `scripts/train_one_side_judge.py`.")
    return "\n".join(rows)


def replace_block(text: str, name: str, body: str) -> str:
    pat = re.compile(rf"(<!-- {name}:begin -->\n)(?:.*?\n)?(<!-- {name}:end -->)", re.S)
    if not pat.search(text):
        raise SystemExit(f"README.md has no <!-- {name}:begin --> / <!-- {name}:end --> block")
    return pat.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-readme", action="store_true", help="replace the two tables in README.md")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="berds-demo-table-") as tmp:
        rows = demo_rows(Path(tmp))
    demo_md, judge_md = demo_markdown(rows), judge_markdown()
    if args.write_readme:
        readme = ROOT / "README.md"
        text = replace_block(readme.read_text(encoding="utf-8"), "demo-table", demo_md)
        readme.write_text(replace_block(text, "judge-table", judge_md), encoding="utf-8")
    if args.json:
        print(json.dumps({"demo": rows, "seconds": round(time.perf_counter() - t0, 1)}, indent=1))
    else:
        print(demo_md + "\n\n" + judge_md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
