"""``berds discover`` (perspectives for claims, from a pool) and ``berds discover-eval`` (PERSPECTRUM T1/T2/T3).

    berds discover --claims claims.json --pool perspective_pool_v1.0.json [--split dev]
                   [--method offline|llm --llm SPEC] [--max-k N] [--min-k N] --out OUT.jsonl
    berds discover-eval --pred OUT.jsonl --gold perspectrum_with_answers_v1.0.train_dev.json [--json]

A claim gets the pool's perspectives relevant to it, as the Playground's *Discover perspectives* shows them
(``Discoverer.answer``: a question is read in its claim form): none when the pool holds nothing on its topic.

Output lines: ``{"id", "claim", "perspectives": [{pid, text, stance, cluster, score,
support_prob, members}]}``; when the claims file carries PERSPECTRUM clusters,
also ``"on_gold": [{pid, stance, cluster}]`` (the system's stance and cluster
for each gold perspective: PERSPECTRUM's T2 and T3 are defined on them).
"""
from __future__ import annotations

import time

from ..errors import InputError
from ._parsing import declare


def register(sub) -> None:
    p = sub.add_parser("discover", help="find, stance and de-duplicate perspectives for claims from a sentence pool")
    p.add_argument("--claims", required=True,
                   help="claims: PERSPECTRUM JSON, JSONL {id, claim|text|question}, or .txt (one per line)")
    p.add_argument("--pool", required=True, help="perspective sentences: PERSPECTRUM pool JSON, JSONL {id|pId, text}, "
                                                 "TSV/CSV with a text column, or .txt (one per line); demo: the "
                                                 "built-in demo pool")
    p.add_argument("--split", default=None, help="PERSPECTRUM claims only: keep this split (train, dev)")
    p.add_argument("--method", choices=("offline", "llm"), default="offline",
                   help="offline: the shipped MiniLM models; llm: yes/no answers of --llm")
    p.add_argument("--llm", metavar="SPEC", default=None, help="for --method llm: hf:<model> or openai:<model>@<url>")
    p.add_argument("--max-k", type=int, default=None,
                   help="most perspectives per claim (default: the tuned value; 0: no limit)")
    p.add_argument("--min-k", type=int, default=0,
                   help="fewest perspectives per claim, kept even below the relevance threshold (default 0: only "
                        "what is on the claim's topic, as the Playground; PERSPECTRUM's benchmark tuned 1, since "
                        "every claim there has perspectives in the pool)")
    p.add_argument("--no-label-gold", action="store_true",
                   help="do not label the claims' gold perspectives (on_gold) even when the file has them")
    p.add_argument("--out", required=True, help="JSON Lines to write, one line per claim")
    p.set_defaults(func=run_discover)
    declare(p, inputs=("claims", "pool"), outputs=("out",), servers=("llm",))

    p = sub.add_parser("discover-eval", help="PERSPECTRUM's T1/T2/T3 scores of berds discover output")
    p.add_argument("--pred", required=True, help="berds discover output (JSON Lines)")
    p.add_argument("--gold", required=True, help="PERSPECTRUM claims with clusters (perspectrum_with_answers*.json)")
    p.add_argument("--split", default=None, help="score only the gold claims of this split")
    p.set_defaults(func=run_eval)
    declare(p, inputs=("pred", "gold"))


def open_discoverer(pool_path, method: str, llm: str | None, progress: bool = False):
    """(PoolIndex, Discoverer) or InputError naming the option at fault."""
    from ..discovery.pipeline import Discoverer
    from ..discovery.pool import open_pool

    if method == "llm" and not llm:
        raise InputError("--llm", None, None, "--method llm needs an LLM: hf:<model> or openai:<model>@<base_url>")
    if method != "llm" and llm:
        raise InputError("--llm", None, None, "has no effect without --method llm")
    index = open_pool(pool_path, progress=progress)
    try:
        return index, Discoverer(index, method, llm=llm)
    except FileNotFoundError as e:
        raise InputError("discovery weights", None, None, str(e)) from None
    except (ValueError, OSError) as e:  # unknown spec, a model that cannot load
        raise InputError("--llm", None, None, str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def run_discover(args) -> dict:
    from tqdm import tqdm

    from ..discovery.claims import load_claims
    from ..files.jsonio import atomic_write

    if args.max_k is not None and args.max_k < 0:
        raise InputError("--max-k", None, None, "must be 0 (no limit) or more")
    if args.min_k < 0:
        raise InputError("--min-k", None, None, "must be 0 or more")
    t0 = time.perf_counter()
    claims = load_claims(args.claims, args.split)
    index, disc = open_discoverer(args.pool, args.method, args.llm, progress=not args.quiet)
    max_k = -1 if args.max_k is None else (None if args.max_k == 0 else args.max_k)
    t1 = time.perf_counter()
    n_out, n_without, sides = 0, 0, {"support": 0, "undermine": 0}
    import json

    from ..generators import GenerationError

    with atomic_write(args.out) as fh:
        for c in tqdm(claims, desc="discover", unit="claim", disable=args.quiet):
            try:
                found = disc.answer(c.text, max_k=max_k, min_k=args.min_k)
                line = {"id": c.id, "claim": c.text, "perspectives": found}
                if c.gold is not None and not args.no_label_gold:
                    line["on_gold"] = disc.label(c.text, [p for cl in c.gold.clusters for p in cl])
            except GenerationError as e:
                raise InputError("--llm", None, None, str(e).splitlines()[0]) from None
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            n_out += len(found)
            n_without += not found
            for p in found:
                sides[p["stance"]] += 1
    secs = time.perf_counter() - t1
    return {"out": str(args.out), "claims": len(claims), "perspectives": n_out,
            "perspectives_per_claim": round(n_out / len(claims), 2), **sides,
            "claims_without": n_without, "method": disc.name,
            "pool": str(args.pool), "pool_sentences": len(index), "knobs": _knobs(disc, max_k, args.min_k),
            "discover_seconds": round(secs, 3), "claims_per_s": round(len(claims) / secs, 3) if secs else None,
            "seconds": round(time.perf_counter() - t0, 3)}


def _knobs(disc, max_k, min_k: int) -> dict:
    from dataclasses import asdict

    k = {**asdict(disc.knobs), "min_k": min_k}
    if max_k != -1:
        k["max_k"] = max_k
    return k


def read_predictions(path) -> dict[str, dict]:
    """``berds discover`` output keyed by claim id, checked line by line."""
    from ..files.jsonio import iter_jsonl

    preds: dict[str, dict] = {}
    for no, obj in iter_jsonl(path):
        cid = obj.get("id")
        if cid is None or isinstance(cid, bool) or not isinstance(cid, (str, int)):
            raise InputError(path, no, "id", "missing" if cid is None else "expected a string or integer")
        cid = str(cid)
        if cid in preds:
            raise InputError(path, no, "id", f"duplicate claim id {cid!r}")
        for key in ("perspectives", "on_gold"):
            val = obj.get(key, [] if key == "on_gold" else None)
            if val is None:
                raise InputError(path, no, key, "missing")
            if not isinstance(val, list):
                raise InputError(path, no, key, f"expected a list, got {type(val).__name__}")
            for j, p in enumerate(val):
                if not isinstance(p, dict) or p.get("pid") is None:
                    raise InputError(path, no, f"{key}[{j}].pid", "missing")
                st = p.get("stance")
                if st is not None and st not in ("support", "undermine"):
                    raise InputError(path, no, f"{key}[{j}].stance", f"expected support or undermine, got {st!r}")
        preds[cid] = obj
    if not preds:
        raise InputError(path, None, None, "no predictions (empty file)")
    return preds


def run_eval(args) -> dict:
    from ..discovery.claims import load_gold
    from ..discovery.evaluate import evaluate_predictions

    gold = load_gold(args.gold, args.split)
    preds = read_predictions(args.pred)
    unknown = [cid for cid in preds if cid not in gold]
    if unknown and not args.split:
        raise InputError(args.pred, None, "id", f"claim {unknown[0]!r} is not in {args.gold}")
    preds = {cid: p for cid, p in preds.items() if cid in gold}
    if not preds:
        raise InputError(args.pred, None, "id", f"no predicted claim is in {args.gold}"
                                                + (f" (split {args.split})" if args.split else ""))
    res = evaluate_predictions(preds, gold)
    res["gold_claims"] = len(gold)
    res["missing_claims"] = len(gold) - len(preds)
    return res
