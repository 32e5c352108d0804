"""Write ``berds_core/demo/embeddings.npz``: the demo's embeddings, shipped so a fresh server answers its
first demo question without loading or running the encoder (``berds_core.studio.warmup.seed_shipped``).

    python scripts/precompute_demo_embeddings.py [--out berds_core/demo/embeddings.npz]

For each CPU precision of the default encoder (bf16: CPUs with native bf16; int8: the others), in an empty
cache: the app's own warm-up (``warmup.warm_passages``: every passage, as text and as "title. text", and the
questions' perspectives) and then everything the Playground computes for each demo question (every column
at k = 10 with each perspective source, and the look-up of missing perspectives), through the same code the
page runs (``berds_core.studio.columns.column_result`` / ``best_ranks``). Every vector the embedding store then holds
for the encoder is written, keyed by the sha1 of its text, as float16 (finer than the bf16 and int8
encodings themselves); ``seed_shipped`` re-normalises them in float32.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENCODINGS = ("bf16", "int8")
METHODS = ("none", "mmr", "qe", "rerank", "xquad", "pm2")
SOURCES = ("dataset", "offline", "oracle")


def vectors_for(encoding: str) -> dict[str, np.ndarray]:
    """``{sha1(text): vector}`` the store holds after the page's work on the demo in ``encoding``."""
    os.environ["BERDS_CACHE"] = tempfile.mkdtemp(prefix=f"berds-demo-{encoding}-")
    from berds_core import datasets
    from berds_core.corpus import corpus_from_passages
    from berds_core.embeddings.store import embedding_store, text_encoder
    from berds_core.judges import get_judge
    from berds_core.retrieval import get_retriever
    from berds_core.studio.warmup import warm_passages
    from berds_core.retrieval.caching import SharedSearch
    from berds_core.studio.columns import Engine, best_ranks, column_pipeline, column_result

    b = datasets.load_demo()
    corpus = corpus_from_passages(b.passages, "demo")
    te = text_encoder(None, encoding=encoding)
    judge = get_judge("embedded", encoding=encoding)
    warm_passages(corpus, judge, te, texts=[p for q in b.questions
                                            for p in list(q.perspectives) + list(q.generated_perspectives or ())])
    retriever = SharedSearch(get_retriever("bm25", corpus, progress=False))
    for q in b.questions:
        for method in METHODS:
            for source in SOURCES if method in ("qe", "rerank", "xquad", "pm2") else ("dataset",):
                if source == "dataset" and not q.generated_perspectives and method != "none":
                    continue
                res = column_result(Engine(corpus, retriever, judge, te), q,
                                    column_pipeline(method, 0.75 if method == "mmr" else None, source), 10, gold=b.gold)
                assert res["passages"], (q.id, method)
        best_ranks(Engine(corpus, retriever, judge), q, list(range(len(q.perspectives))))
    store = embedding_store()
    with sqlite3.connect(store.path) as con:
        rows = con.execute("SELECT text, vec FROM emb WHERE model = ?", (te.key,)).fetchall()
    print(f"{encoding}: {len(rows)} vectors ({te.key})", file=sys.stderr)
    return {h: np.frombuffer(v, dtype=np.float32) for h, v in rows}, te.key, corpus.hash


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "berds_core" / "demo" / "embeddings.npz"))
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    per, keys, hashes = {}, {}, set()
    corpus_hash = None
    for enc in ENCODINGS:
        per[enc], keys[enc], corpus_hash = vectors_for(enc)
        hashes |= set(per[enc])
    order = sorted(h for h in hashes if all(h in per[e] for e in ENCODINGS))
    template = keys[ENCODINGS[0]].replace(f"|{ENCODINGS[0]}|", "|{encoding}|")
    assert all(keys[e] == template.replace("{encoding}", e) for e in ENCODINGS), keys
    from berds_core.files.jsonio import atomic_write

    with atomic_write(args.out, "wb") as fh:
        np.savez_compressed(fh, hashes=np.array(order), corpus_hash=np.array(corpus_hash),
                            key_template=np.array(template),
                            **{e: np.stack([per[e][h] for h in order]).astype(np.float16) for e in ENCODINGS})
    print(f"wrote {args.out}: {len(order)} texts x {len(ENCODINGS)} precisions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
