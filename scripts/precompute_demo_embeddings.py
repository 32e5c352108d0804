"""Write ``berds_core/demo/embeddings.npz``: the demo's embeddings, shipped so a fresh server answers its
first demo question without loading or running the encoder (``berds_core.studio.warmup.seed_shipped``).

    python scripts/precompute_demo_embeddings.py [--out berds_core/demo/embeddings.npz]

For the reference precision (fp32: the default on every CPU, issue 52; the bf16 and int8 speed modes are
opt-in and compute their own), in its own process (``BERDS_ENCODING`` set, so every encoder and the stance
model run at it) with an empty cache: the app's
own warm-up (``warmup.warm_passages``: every passage and the questions' perspectives) and then everything the
Playground computes for each demo question in its own pool (every column at k = 10 with each perspective
source, with BM25 and with dense, and the look-up of missing perspectives), through the same code the
page runs (``berds_core.studio.columns.column_result`` / ``best_ranks``), the diverse preset's column
included. Written: every vector the embedding store then holds for the encoder, keyed by the sha1 of its
text, as the float32 the encoder computed (bit for bit what the store would hold); the stance model's
encodings of the preset's (question, candidate) pairs (float32) and of the (perspective, passage) pairs the
embedded judge's one-side rule read (the members of opposite perspectives); and the
embedded judge's probabilities of every pair the page judged (its prediction cache, float32), keyed as
the caches key them.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENCODINGS = ("fp32",)
SOURCES = ("dataset", "offline", "oracle")


def vectors_for(encoding: str) -> dict[str, np.ndarray]:
    """``{sha1(text): vector}`` the store holds after the page's work on the demo in ``encoding``."""
    root = os.environ.get("BERDS_DEMO_CACHE_ROOT")  # a kept cache per precision (a rerun reads it back)
    os.environ["BERDS_CACHE"] = (str(Path(root) / encoding) if root
                                 else tempfile.mkdtemp(prefix=f"berds-demo-{encoding}-"))
    from berds_core import datasets
    from berds_core.corpora.memory import corpus_from_passages
    from berds_core.embeddings.text_encoders import embedding_store, text_encoder
    from berds_core.judges import get_judge
    from berds_core.judges.verdicts import judge_groups
    from berds_core.retrieval import get_retriever
    from berds_core.studio.warmup import warm_passages
    from berds_core.retrieval.caching import SharedSearch
    from berds_core.studio.columns import Engine, best_ranks, column_pipeline, column_result
    from berds_core.diversify.methods import METHOD_TABLE, PERSPECTIVE_METHODS, PLAYGROUND
    from berds_core.retrieval import READY_RETRIEVERS

    plain = {m.name for m in METHOD_TABLE if m.stage in (None, "none")}  # plain retrieval and the preset

    b = datasets.load_demo()
    corpus = corpus_from_passages(b.passages, "demo")
    by_id = {p.id: p for p in b.passages}
    pools = {qid: corpus_from_passages([by_id[i] for i in ids], f"demo:{qid}") for qid, ids in b.pools.items()}
    te = text_encoder(None, encoding=encoding)
    judge = get_judge("embedded", encoding=encoding)
    warm_passages(corpus, judge, te, texts=[p for q in b.questions
                                            for p in list(q.perspectives) + list(q.generated_perspectives or ())])
    for q in b.questions:  # each question in its own pool, as the pages rank it (studio.data.Data.corpus_for)
        pool = pools[q.id]
        retrievers = {kind: SharedSearch(get_retriever(kind, pool, progress=False)) for kind in READY_RETRIEVERS}
        for kind, retriever in retrievers.items():
            for method in PLAYGROUND:  # every column the Playground can show
                if method == "preset" and kind == "bm25":
                    continue  # the preset retrieves with dense whatever the sidebar says
                for source in SOURCES if method in PERSPECTIVE_METHODS else ("dataset",):
                    if source == "dataset" and not q.generated_perspectives and method not in plain:
                        continue
                    res = column_result(Engine(pool, retriever, judge, te), q,
                                        column_pipeline(method, 0.75 if method == "mmr" else None, source), 10,
                                        gold=b.gold)
                    assert res["passages"], (q.id, method)
            best_ranks(Engine(pool, retriever, judge), q, list(range(len(q.perspectives))))
    from berds_core.judges.base import prediction_cache
    from berds_core.stance import get_stance_model

    store = embedding_store()
    from berds_core.diversify.presets import get_preset

    tokens = next((getattr(st, "tokens", None) for st in get_preset("diverse").stages if st.name == "coverage"), None)
    skey = get_stance_model().key_for(tokens)  # the preset's (question, candidate) pairs, at its length
    with sqlite3.connect(store.path) as con:
        rows = con.execute("SELECT text, vec FROM emb WHERE model = ?", (te.key,)).fetchall()
        # the stance model's encodings of (question, candidate) pairs (the preset); the judge's pairs ship
        # as its probabilities below, 4 bytes each rather than a 384-dim vector
        questions = {text_hash_pair(q.question, p) for q in b.questions for p in _candidates(pools[q.id])}
        srows = [(h, v) for h, v in con.execute("SELECT text, vec FROM emb WHERE model = ?", (skey,))
                 if h in questions]
    # the stance model's encodings of the (perspective, passage) pairs the judge's one-side rule read: the
    # members of each demo question's opposite perspectives, at the stance model's trained length
    jkey = judge.stance_model.key_for(None) if getattr(judge, "one_side", None) else None
    members = {text_hash_pair(q.perspectives[k], pools[q.id].texts[i]) for q in b.questions
               for g in judge_groups(judge, q.perspectives, q.question, q.stances) for k in g
               for i in range(len(pools[q.id]))}
    with sqlite3.connect(store.path) as con:
        jsrows = [(h, v) for h, v in con.execute("SELECT text, vec FROM emb WHERE model = ?", (jkey,))
                  if h in members] if jkey else []
    with sqlite3.connect(prediction_cache().path) as con:
        jrows = con.execute("SELECT passage, perspective, prob FROM preds WHERE judge = ?",
                            (judge.cache_key,)).fetchall()
    print(f"{encoding}: {len(rows)} vectors ({te.key}), {len(srows)} stance pairs ({skey}), {len(jsrows)} "
          f"one-side pairs ({jkey}), {len(jrows)} judged pairs ({judge.cache_key})", file=sys.stderr)
    return {"text": ({h: np.frombuffer(v, dtype=np.float32) for h, v in rows}, te.key),
            "stance": ({h: np.frombuffer(v, dtype=np.float32) for h, v in srows}, skey),
            "sides": ({h: np.frombuffer(v, dtype=np.float32) for h, v in jsrows}, jkey),
            "judge": ({(a, c): float(p) for a, c, p in jrows}, judge.cache_key)}, corpus.hash


def text_hash_pair(target: str, text: str) -> str:
    from berds_core.stance.model import pair_key

    return pair_key(target, text)


def _candidates(corpus) -> list[str]:
    """Every passage string the preset's stance step could read for a question (any passage of its pool)."""
    from berds_core.stance import passage_string

    return [passage_string(corpus[i]) for i in range(len(corpus))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "berds_core" / "demo" / "embeddings.npz"))
    ap.add_argument("--worker", nargs=2, metavar=("ENCODING", "DUMP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.worker:
        enc, dump = args.worker
        with open(dump, "wb") as fh:
            pickle.dump(vectors_for(enc), fh)
        return 0
    per, corpus_hash = {}, None
    for enc in ENCODINGS:  # each precision in its own process, every encoder of it at that precision
        with tempfile.TemporaryDirectory() as tmp:
            dump = Path(tmp) / "vectors.pkl"
            subprocess.run([sys.executable, __file__, "--worker", enc, str(dump)], check=True,
                           env={**os.environ, "BERDS_ENCODING": enc})
            with open(dump, "rb") as fh:
                per[enc], corpus_hash = pickle.load(fh)
    parts = {}
    for kind in ("text", "judge"):
        common = set.intersection(*(set(per[e][kind][0]) for e in ENCODINGS))
        parts[kind] = sorted(common)
    # the preset's candidates are each precision's own dense top k: every precision keeps its own pairs
    stance_parts = {e: sorted(per[e]["stance"][0]) for e in ENCODINGS}
    keys = {e: per[e]["text"][1] for e in ENCODINGS}
    template = keys[ENCODINGS[0]].replace(f"|{ENCODINGS[0]}|", "|{encoding}|")
    assert all(keys[e] == template.replace("{encoding}", e) for e in ENCODINGS), keys
    from berds_core.files.jsonio import atomic_write

    arrays = {"hashes": np.array(parts["text"]), "corpus_hash": np.array(corpus_hash),
              "key_template": np.array(template),
              "judge_keys": np.array(parts["judge"]).reshape(-1, 2)}
    for e in ENCODINGS:
        arrays[e] = np.stack([per[e]["text"][0][h] for h in parts["text"]]).astype(np.float32)
        arrays[f"stance_key_{e}"] = np.array(per[e]["stance"][1])
        arrays[f"stance_hashes_{e}"] = np.array(stance_parts[e])
        arrays[f"stance_{e}"] = np.stack([per[e]["stance"][0][h] for h in stance_parts[e]]).astype(np.float32)
        sides, jkey = per[e]["sides"]
        if jkey:  # the one-side rule's stance reads of the demo's opposite perspectives
            arrays[f"sides_key_{e}"] = np.array(jkey)
            arrays[f"sides_hashes_{e}"] = np.array(sorted(sides))
            arrays[f"sides_{e}"] = np.stack([sides[h] for h in sorted(sides)]).astype(np.float32)
        arrays[f"judge_ns_{e}"] = np.array(per[e]["judge"][1])
        arrays[f"judge_{e}"] = np.array([per[e]["judge"][0][k] for k in parts["judge"]], np.float32)
    with atomic_write(args.out, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    order = parts["text"]
    print(f"wrote {args.out}: {len(order)} texts x {len(ENCODINGS)} precisions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
