"""Pair features for the embedded judge, from ONE MiniLM forward pass per text.

Each unique passage and each unique perspective is encoded once (passage
embeddings are reused across all perspectives of a question, and across calls
through a small in-memory cache). From that pass we keep the normalised
sentence embedding and the normalised token embeddings, and build per pair:

- ``cos``: cosine of the sentence embeddings (the plain dense baseline);
- ``win_max`` / ``win_top2``: best (and mean of the two best) cosine between the
  perspective and windows of 16 passage tokens, mean-pooled from the same pass
  (sentence-level relevance without splitting the passage);
- ``maxsim_mean`` / ``maxsim_min`` / ``maxsim_q25``: ColBERT-style late
  interaction: for each content token of the perspective, its best cosine with
  any passage token; statistics over the perspective's tokens;
- ``lex``: share of the perspective's content-word stems found in the passage;
- ``s_neg``, ``p_neg``, ``neg_cos``: negation cues in the perspective (0/1), in
  the passage (per 100 words) and their interaction with ``cos`` (the stance
  part: "X" and "not X" embed almost identically);
- ``p_len``: passage length in words / 100;
- ``rel``: a relevance head on ``[u*v, |u-v|]`` of the two sentence embeddings,
  trained on PERSPECTRUM (perspective sentence vs its own claim / another claim);
- ``opinion``: opinion / argument cue words in the passage per 100 words
  (should, must, believe, harm, benefit, ...): passages that argue, not just inform;
- ``w_cos``: cosine of wordllama static embeddings (``load_wordllama``: the
  weights and tokenizer shipped inside the ``wordllama`` package, no download).

Fast path: when every feature asked for is a sentence-level one
(``SENTENCE_FEATURES``: what the shipped head uses), no token-level work is
done: sentence embeddings come from the one embedding store
(``berds_core.embeddings.store.text_encoder``, keyed by model, precision, max tokens
and sha1 of the text) that dense retrieval, MMR and the coverage re-ranker read
too, so a passage retrieved or judged once is never encoded again, in this
process or the next.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import numpy as np

FEATURES = ["cos", "win_max", "win_top2", "maxsim_mean", "maxsim_min", "maxsim_q25",
            "lex", "s_neg", "p_neg", "neg_cos", "neg_lex", "p_len", "rel", "opinion", "w_cos"]
SENTENCE_FEATURES = frozenset({"cos", "rel", "p_len", "w_cos"})

WINDOW, STRIDE = 16, 8
_WORD = re.compile(r"[A-Za-z0-9']+")
_NEG = re.compile(r"\b(?:not|no|never|none|nor|neither|cannot|without|against|shouldn't|isn't|aren't|"
                  r"doesn't|don't|didn't|won't|wouldn't|can't|couldn't|wasn't|weren't|hasn't|haven't|"
                  r"oppose[sd]?|ban(?:ned|s)?|reject(?:s|ed)?|harmful|wrong|fail(?:s|ed)?)\b", re.I)
_OPINION = re.compile(r"\b(?:should|must|ought|need|needs|believe|think|argue[sd]?|clearly|important|"
                      r"benefit\w*|harm\w*|better|worse|best|worst|right|wrong|good|bad|I|we|our|my)\b", re.I)
_STOP = None
_STEM = None


def _stopwords() -> frozenset:
    global _STOP
    if _STOP is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STOP = frozenset(ENGLISH_STOP_WORDS) | {"s", "t", "does", "do", "should", "would", "could"}
    return _STOP


def _stems(words: list[str]) -> list[str]:
    global _STEM
    if _STEM is None:
        import Stemmer

        _STEM = Stemmer.Stemmer("english")
    return _STEM.stemWords(words)


def content_stems(text: str) -> set[str]:
    stop = _stopwords()
    words = [w.lower() for w in _WORD.findall(text)]
    return set(_stems([w for w in words if w not in stop and len(w) > 1]))


def negation_count(text: str) -> int:
    return len(_NEG.findall(text))


@lru_cache(maxsize=2)
def load_wordllama(dim: int = 256):
    """WordLlama (l2_supercat) from the files the ``wordllama`` package ships, offline.

    ``WordLlama.load`` looks for the tokenizer in ``<package>/tokenizer/`` but the
    package ships it in ``<package>/tokenizers/`` (weights in ``<package>/weights/``);
    its ``cache_dir`` lookup uses exactly those two sub-folders, so pointing
    ``cache_dir`` at the package folder finds both, with downloads disabled.
    """
    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(config="l2_supercat", dim=dim, cache_dir=Path(wordllama.__file__).parent,
                          disable_download=True)


from ..embeddings.store import EmbeddingStore, embedding_store  # noqa: E402,F401  (the one store; re-exported)


class _Encoded:
    """What one text contributes: sentence vector, token vectors, windows, stems, cues."""

    __slots__ = ("sent", "toks", "content", "wins", "stems", "neg", "n_words", "opinion")

    def __init__(self, sent, toks, content, wins, stems, neg, n_words, opinion):
        self.sent, self.toks, self.content, self.wins = sent, toks, content, wins
        self.stems, self.neg, self.n_words, self.opinion = stems, neg, n_words, opinion


class Featurizer:
    """Encodes texts with a SentenceTransformer (MiniLM by default) and builds pair features."""

    def __init__(self, model=None, device=None, batch_size: int = 64, cache_size: int = 20000,
                 rel_head: tuple[np.ndarray, float] | None = None, encoding: str = "fp32",
                 needed: list[str] | None = None, store: bool = True, max_seq_length: int | None = None):
        self.rel_head = rel_head
        self.max_seq_length = max_seq_length  # tokens per text (None: embed_store.MAX_TOKENS, 128)
        # which features the caller uses (None: all); sentence-level only -> the fast path
        self.needed = list(needed) if needed is not None else list(FEATURES)
        self.store = store  # persist sentence embeddings in EmbeddingStore
        self._wl: dict[str, np.ndarray] = {}
        self.n_encoded = 0  # texts run through the transformer (tests and benches read it)
        self.encoding = encoding  # fp32 | bf16 | int8 | auto (berds_core.embeddings.models.load_encoder)
        self.model_id = model
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._text_encoder = None
        self._cache: OrderedDict[str, _Encoded] = OrderedDict()
        self._cache_size = cache_size

    @property
    def model(self):
        if self._model is None:
            from ..embeddings.models import load_encoder

            from ..embeddings.store import MAX_TOKENS

            self._model = load_encoder(self.model_id, self.device, self.encoding, self.max_seq_length or MAX_TOKENS)
        return self._model

    def _encode(self, texts: list[str]) -> list[_Encoded]:
        import torch

        model = self.model
        special = set(model.tokenizer.all_special_ids)
        stop = _stopwords()
        out: list[_Encoded] = []
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths per batch
        results: list[_Encoded | None] = [None] * len(texts)
        for start in range(0, len(texts), self.batch_size):
            idx = order[start:start + self.batch_size]
            batch = [texts[i] for i in idx]
            feats = model.preprocess(batch) if hasattr(model, "preprocess") else model.tokenize(batch)
            feats = {k: (v.to(model.device) if hasattr(v, "to") else v) for k, v in feats.items()}
            with torch.inference_mode():
                o = model(feats)
            sent = torch.nn.functional.normalize(o["sentence_embedding"].float(), dim=-1).cpu().numpy()
            toks = torch.nn.functional.normalize(o["token_embeddings"].float(), dim=-1).cpu().numpy()
            ids = feats["input_ids"].cpu().numpy()
            mask = feats["attention_mask"].cpu().numpy().astype(bool)
            raw = o["token_embeddings"].float().cpu().numpy()
            for b, i in enumerate(idx):
                keep = mask[b] & ~np.isin(ids[b], list(special))
                t = toks[b][keep]
                words = model.tokenizer.convert_ids_to_tokens(ids[b][keep].tolist())
                content = np.array([not (w.startswith("##") or w.lower() in stop or not w.isalnum())
                                    for w in words], dtype=bool) if len(words) else np.zeros(0, bool)
                r = raw[b][keep]
                if len(r) == 0:
                    r = np.zeros((1, raw.shape[-1]), np.float32)
                    t = r
                starts = range(0, max(1, len(r) - WINDOW + STRIDE), STRIDE)
                wins = np.stack([r[s:s + WINDOW].mean(0) for s in starts])
                wins /= np.linalg.norm(wins, axis=1, keepdims=True) + 1e-9
                text = texts[i]
                results[i] = _Encoded(sent[b], t.astype(np.float32), content, wins.astype(np.float32),
                                      content_stems(text), negation_count(text),
                                      max(1, len(_WORD.findall(text))), len(_OPINION.findall(text)))
        out.extend(results)  # type: ignore[arg-type]
        return out

    def encode(self, texts: list[str]) -> dict[str, _Encoded]:
        """Encode the unique texts not already in the in-memory cache; return all of them."""
        need = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if need:
            self.n_encoded += len(need)
            for t, e in zip(need, self._encode(need)):
                self._cache[t] = e
        got = {t: self._cache[t] for t in dict.fromkeys(texts)}
        for t in got:
            self._cache.move_to_end(t)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return got

    @property
    def text_encoder(self):
        """The shared ``embed_store.TextEncoder`` for this model, precision and length (no store: a private one)."""
        if self._text_encoder is None:
            from ..embeddings.store import TextEncoder, text_encoder

            if self.store:
                self._text_encoder = text_encoder(self.model_id, self.device, self.encoding, self.max_seq_length)
            else:
                self._text_encoder = TextEncoder(self.model_id, self.device, self.encoding, self.max_seq_length,
                                                 batch_size=self.batch_size, store=False)
        return self._text_encoder

    @property
    def store_key(self) -> str:
        return self.text_encoder.key

    def sentence_embeddings(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Unit-length float32 sentence embeddings of the unique ``texts``: memory, then store, then encode.

        The same vectors as dense retrieval's for the same model, precision and length (one store).
        """
        te = self.text_encoder
        before = te.n_encoded
        got = te.embed_map(texts)
        self.n_encoded += te.n_encoded - before
        return got

    def _wordllama_cos(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        need = [t for t in dict.fromkeys([p for p, _ in pairs] + [s for _, s in pairs]) if t not in self._wl]
        if need:
            for t, v in zip(need, load_wordllama().embed(need, norm=True)):
                self._wl[t] = np.asarray(v, np.float32)
        return np.array([float(self._wl[p] @ self._wl[s]) for p, s in pairs], np.float32)

    def _sentence_features(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The fast path: only SENTENCE_FEATURES filled (others stay 0), vectorised over pairs."""
        X = np.zeros((len(pairs), len(FEATURES)), np.float32)
        if not pairs:
            return X
        emb = self.sentence_embeddings([p for p, _ in pairs] + [s for _, s in pairs])
        P = np.stack([emb[p] for p, _ in pairs])
        S = np.stack([emb[s] for _, s in pairs])
        X[:, FEATURES.index("cos")] = np.einsum("ij,ij->i", P, S)
        if "rel" in self.needed and self.rel_head is not None:
            w_rel, b_rel = self.rel_head
            z = np.hstack([P * S, np.abs(P - S)]) @ w_rel + b_rel
            X[:, FEATURES.index("rel")] = 1.0 / (1.0 + np.exp(-z))
        if "p_len" in self.needed:
            X[:, FEATURES.index("p_len")] = [max(1, len(_WORD.findall(p))) / 100.0 for p, _ in pairs]
        if "w_cos" in self.needed:
            X[:, FEATURES.index("w_cos")] = self._wordllama_cos(pairs)
        return X

    def features(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Feature matrix (len(pairs) x len(FEATURES)), float32.

        With only sentence-level features ``needed``, the others are left at 0.
        """
        if set(self.needed) <= SENTENCE_FEATURES:
            return self._sentence_features(pairs)
        enc = self.encode([p for p, _ in pairs] + [s for _, s in pairs])
        X = np.zeros((len(pairs), len(FEATURES)), np.float32)
        for n, (p_text, s_text) in enumerate(pairs):
            p, s = enc[p_text], enc[s_text]
            cos = float(p.sent @ s.sent)
            w = np.sort(p.wins @ s.sent)[::-1]
            st = s.toks[s.content] if s.content.any() else s.toks
            sim = (st @ p.toks.T).max(axis=1) if len(p.toks) and len(st) else np.zeros(1)
            lex = len(s.stems & p.stems) / len(s.stems) if s.stems else 0.0
            s_neg = 1.0 if s.neg else 0.0
            rel = 0.0
            if self.rel_head is not None:
                w_rel, b_rel = self.rel_head
                z = float(np.concatenate([p.sent * s.sent, np.abs(p.sent - s.sent)]) @ w_rel + b_rel)
                rel = 1.0 / (1.0 + np.exp(-z))
            X[n, :-1] = (cos, w[0], w[:2].mean(), sim.mean(), sim.min(), np.quantile(sim, 0.25),
                         lex, s_neg, 100.0 * p.neg / p.n_words, s_neg * cos, s_neg * lex, p.n_words / 100.0,
                         rel, 100.0 * p.opinion / p.n_words)
        if "w_cos" in self.needed:
            X[:, FEATURES.index("w_cos")] = self._wordllama_cos(pairs)
        return X
