"""What the fp32 reference costs against the CPU's fast precisions, the three user-facing timings in one run.

    python bench/precision_speed.py [--encodings fp32 bf16] [--emulate-avx2] [--rounds 1] [--json]

Issue 52 made fp32 the default precision on every CPU (bf16 on AVX512-BF16 CPUs and int8 dynamic
quantisation elsewhere were the defaults before: figures that depended on the CPU and the batch). Per
round and per encoding (interleaved, each in its own processes with ``BERDS_ENCODING`` set):

- ``playground``: ``bench/playground.py --retriever dense --no-browser --repeat 1`` (the demo, empty cache):
  the one-off warm-up (``warmup_s``), then each demo question for the first time after it
  (``first_question_ms``: the first one; ``cold_ms_per_question`` / ``_max``: all 14);
- ``judge``: ``bench/judge_cpu.py --encodings ENC --runs 3`` (BERDS human pairs, empty store): the embedded
  judge's cold pairs/s (``judge_cold_pairs_s``);
- ``retrieve``: ``berds retrieve --retriever dense`` cold (an empty cache: every passage encoded) over a
  development corpus sample (``bench/diversity.timing_corpus``: procon's questions and passages plus
  PERSPECTRUM and BERDS-dev fillers), wall seconds (``retrieve_dense_s``).

``--emulate-avx2``: every process restricted to AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``,
``ONEDNN_MAX_CPU_ISA=AVX2``, ``MKL_ENABLE_INSTRUCTIONS=AVX2``: no bf16 matmuls), the CPU of most laptops,
emulated on this one (use ``--encodings fp32 int8``, int8 being that CPU's old default). Reports medians
over rounds, the ratios against the first encoding, the CPU (``lscpu``) and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def _json_out(cmd: list[str], env: dict) -> dict:
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_name() -> str:
    try:
        info = dict(line.split(":", 1) for line in subprocess.run(["lscpu"], capture_output=True, text=True)
                    .stdout.splitlines() if ":" in line)
        flags = info.get("Flags", "")
        isa = "AVX512-BF16" if "avx512_bf16" in flags else "AVX-512" if "avx512f" in flags else "AVX2"
        return (f"{info.get('Model name', '?').strip()} family {info.get('CPU family', '?').strip()} model "
                f"{info.get('Model', '?').strip()}, {os.cpu_count()} CPUs, {isa}")
    except (OSError, ValueError):
        return "unknown"


def write_corpus(work: Path, data: Path, n_questions: int, n_passages: int) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "bench"))
    from diversity import timing_corpus

    from berds_core.files.jsonio import write_jsonl

    questions, passages = timing_corpus(data, n_questions, n_passages)
    qf, cf = work / "questions.jsonl", work / "corpus.jsonl"
    write_jsonl(qf, [q.to_json() for q in questions])
    write_jsonl(cf, [p.to_json() for p in passages])
    return qf, cf


def one_round(enc: str, env: dict, qf: Path, cf: Path, work: Path, log) -> dict:
    env = {**env, "BERDS_ENCODING": enc, "PYTHONPATH": str(ROOT)}
    py = sys.executable
    pg = _json_out([py, "bench/playground.py", "--retriever", "dense", "--no-browser", "--repeat", "1", "--quiet"],
                   {**env, "BERDS_CACHE": tempfile.mkdtemp(prefix="berds-ps-", dir=work)})
    cold = pg.get("cold_ms_each") or []
    res = {"warmup_s": pg["warmup_s"], "cold_ms_per_question": pg["cold_ms_per_question"],
           "cold_ms_per_question_max": pg["cold_ms_per_question_max"],
           "first_question_ms": cold[0] if cold else None}
    log(f"{enc}: playground {res}")
    jd = _json_out([py, "bench/judge_cpu.py", "--encodings", enc, "--runs", "3", "--json"], env)
    res["judge_cold_pairs_s"] = jd[f"embedded_{enc}"]["cold"]["median"]
    log(f"{enc}: judge {res['judge_cold_pairs_s']} pairs/s")
    t = time.perf_counter()
    subprocess.run([py, "-m", "berds_core", "retrieve", "--questions", str(qf), "--corpus", str(cf),
                    "--retriever", "dense", "--passage-words", "0", "--k", "10", "--out", str(work / f"run-{enc}.jsonl"), "--quiet"],
                   env={**env, "BERDS_CACHE": tempfile.mkdtemp(prefix="berds-ps-", dir=work)}, check=True,
                   capture_output=True)
    res["retrieve_dense_s"] = round(time.perf_counter() - t, 2)
    log(f"{enc}: retrieve {res['retrieve_dense_s']} s")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encodings", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--emulate-avx2", action="store_true")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--questions", type=int, default=100, help="retrieve: questions of the corpus sample")
    ap.add_argument("--passages", type=int, default=2000, help="retrieve: passages of the corpus sample")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(AVX2 if args.emulate_avx2 else {})}
    work = Path(tempfile.mkdtemp(prefix="berds-precision-speed-"))
    qf, cf = write_corpus(work, Path(args.data), args.questions, args.passages)
    load = [os.getloadavg()[0]]
    runs = {e: [] for e in args.encodings}
    for r in range(args.rounds):
        for enc in args.encodings if r % 2 == 0 else args.encodings[::-1]:
            runs[enc].append(one_round(enc, env, qf, cf, work, log))
            load.append(os.getloadavg()[0])
    out = {"cpu": cpu_name(), "emulated_avx2": args.emulate_avx2, "rounds": args.rounds,
           "corpus_sample": {"questions": args.questions, "passages": args.passages},
           "load_avg_1min": [round(min(load), 2), round(max(load), 2)]}
    base = args.encodings[0]
    for enc in args.encodings:
        out[enc] = {k: statistics.median(r[k] for r in runs[enc]) for k in runs[enc][0] if runs[enc][0][k] is not None}
    for enc in args.encodings[1:]:  # > 1: the first encoding is slower (seconds) / faster (pairs/s) by that factor
        out[f"{base}_vs_{enc}"] = {k: round(out[base][k] / out[enc][k], 2) if k != "judge_cold_pairs_s"
                                   else round(out[enc][k] / out[base][k], 2) for k in out[base] if k in out[enc]}
    print(json.dumps(out, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
