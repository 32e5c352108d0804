"""The README's demo table and judge table, regenerated from what the code does (never typed by hand).

    python bench/demo_table.py [--write-readme] [--json]

**Demo table.** The built-in demo as a user runs it from the README: ``berds import demo``, then for each
method ``berds retrieve --corpus-per-question demo/corpora`` (each question retrieves from its own pool, as
BERDS's web setting) with BM25 and with dense, and ``berds evaluate --gold demo/gold.jsonl --k 5``: MRecall@5
and Precision@5 by the gold labels, and how many of the 14 questions each configuration leaves without every
perspective in its top 5. Every command runs as a subprocess of this Python, exactly as typed.

**Judge table.** The embedded judge's out-of-fold figures as ``scripts/train_judge.py`` stored them in its
weights (``berds_core/judges/weights/embedded_v4.npz``), beside the earlier judges under the same protocol.

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
from berds_core.retrieval import CORPUS_RETRIEVERS as RETRIEVERS  # noqa: E402 (after the path): bm25, dense


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


def judge_markdown() -> str:
    from berds_core.judges.embedded import WEIGHTS, load_head

    meta = load_head(str(WEIGHTS))
    oof = meta["oof"]
    j, e = oof["judge"], oof["earlier_cosine"]
    rows = ["| judge (BERDS human pairs, dev half: 276 pairs, 15 questions, out of fold) | F1 | kappa | AUC | "
            "calibration error |", "|---|---|---|---|---|",
            f"| **embedded** (shipped: calibrated cosine, topicality gate) | **{j['f1']:.3f}** | **{j['kappa']:.3f}** | "
            f"{j['auc']:.3f} | **{j['ece']:.3f}** |",
            f"| earlier cosine judge (embedded-minilm-v2's rule), same folds | {e['f1']:.3f} | {e['kappa']:.3f} | "
            f"{e['auc']:.3f} | - |"]
    from berds_core.judges.cross_encoder import HEAD_WEIGHTS

    ce = load_head(str(HEAD_WEIGHTS))["oof"] if HEAD_WEIGHTS.exists() else None
    if ce:
        a = ce["judge"]
        rows.append(f"| argkp (`--judge argkp`, not the default: ArgKP cross-encoder logit + cosine, docs/judge.md) "
                    f"| {a['f1']:.3f} | {a['kappa']:.3f} | {a['auc']:.3f} | {a['ece']:.3f} |")
    for name, r in oof["recorded"].items():
        rows.append(f"| {name}, as recorded | {r['f1']:.3f} | {r['kappa']:.3f} | {r['auc']:.3f} | - |")
    seeds = oof.get("fold_seeds") or []
    if seeds:
        f1 = sorted(s["f1"] for s in seeds)
        ef1 = sorted(s["earlier_f1"] for s in seeds)
        rows.append("")
        rows.append(f"Over {len(seeds)} fold assignments the shipped judge's F1 ranges {f1[0]:.3f} to {f1[-1]:.3f} "
                    f"(earlier cosine judge {ef1[0]:.3f} to {ef1[-1]:.3f}). Unsure (inside the band "
                    f"[{meta['band'][0]:.3f}, {meta['band'][1]:.3f})): {j['unsure_share']:.0%} of pairs. "
                    f"Trained {meta.get('trained', '?')} by `scripts/train_judge.py`."
                    + (f" Medians over the fold assignments: F1 {_median(seeds, 'f1'):.3f}, kappa "
                       f"{_median(seeds, 'kappa'):.3f}" + (f"; argkp {_median(ce['fold_seeds'], 'f1'):.3f}, "
                                                           f"{_median(ce['fold_seeds'], 'kappa'):.3f}"
                                                           if ce and ce.get("fold_seeds") else "") + "."))
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
