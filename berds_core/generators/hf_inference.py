"""How the ``hf`` backend runs its forward passes: the plain path and the optimised one.

The optimised path computes the same function as the plain one (the next-token
logits after each prompt); only the arithmetic is reorganised, so decisions
are unchanged up to floating-point rounding:

- ``batching``: ``input`` (prompts in the order given, ``batch_size`` rows a
  forward pass), ``sorted`` (sorted by token length first: the plain path),
  ``bucket`` (sorted, then cut into batches under a token budget, so rows of
  one batch have nearly the same length and short prompts make larger batches);
- ``prefix``: prompts whose token sequences share a long common prefix (the
  BERDS prompt puts the document before the perspective, so every perspective
  of one passage shares ``<s>[INST] Document: ... Statement:``) are grouped;
  the prefix's key/value cache is computed once per group and extended by each
  member's suffix. Groups come from the full tokenised prompts, so prefix +
  suffix is exactly the prompt's token sequence (no tokenisation boundary moves);
- ``merge_lora``: a LoRA adapter is merged into the weights once at load
  (PEFT ``merge_and_unload``): no adapter matmuls per token;
- ``attn``: the attention kernel (``sdpa``: PyTorch's fused attention);
- ``compile``: ``torch.compile`` of the forward pass (``default``,
  ``reduce-overhead`` = CUDA graphs, ``max-autotune``); off unless asked.

``InferenceOptions.parse("auto")`` (the default) resolves to ``fast`` on CUDA
(bucket + prefix + merged LoRA) and ``plain`` elsewhere (sorted, no prefix
reuse, adapter unmerged), so CPU behaviour is what it was.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

BATCHINGS = ("input", "sorted", "bucket")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
ATTNS = ("sdpa", "eager", "flash_attention_2", "flash_attention_3", "flex_attention")


@dataclass(frozen=True)
class InferenceOptions:
    """What the ``hf`` backend does to run fast; ``None`` fields are decided by the device (:meth:`resolved`)."""

    batching: str | None = None
    prefix: bool | None = None
    merge_lora: bool | None = None
    compile: str | None = None
    attn: str | None = "sdpa"
    batch_tokens: int | None = None  # token budget of a bucketed forward; default batch_size x mean prompt length
    min_prefix: int = 16  # shortest common prefix (tokens) worth a cache of its own

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def parse(cls, spec: "str | InferenceOptions | None") -> "InferenceOptions":
        """``auto`` | ``plain`` | ``fast``, then comma-separated changes: ``prefix``/``no-prefix``,
        ``merge``/``no-merge``, ``input``/``sorted``/``bucket``, ``compile[=mode]``, ``attn=<impl>``,
        ``tokens=<n>``, ``min-prefix=<n>``. E.g. ``fast,no-merge`` or ``plain,prefix``. ValueError (one line)."""
        if isinstance(spec, InferenceOptions):
            return spec
        parts = [p.strip().lower() for p in str(spec or "auto").split(",") if p.strip()] or ["auto"]
        presets = {"auto": cls(), "plain": cls.plain(), "fast": cls.fast()}
        opts = presets.get(parts[0])
        rest = parts[1:]
        if opts is None:
            opts, rest = cls(), parts
        for p in rest:
            key, _, val = p.partition("=")
            if p in BATCHINGS:
                opts = replace(opts, batching=p)
            elif p in ("prefix", "no-prefix"):
                opts = replace(opts, prefix=p == "prefix")
            elif p in ("merge", "no-merge"):
                opts = replace(opts, merge_lora=p == "merge")
            elif key == "compile" and (not val or val in COMPILE_MODES):
                opts = replace(opts, compile=val or "default")
            elif p == "no-compile":
                opts = replace(opts, compile=None)
            elif key == "attn" and val in ATTNS:
                opts = replace(opts, attn=val)
            elif key in ("tokens", "min-prefix") and val.isdigit() and int(val) > 0:
                opts = replace(opts, **{"batch_tokens" if key == "tokens" else "min_prefix": int(val)})
            else:
                raise ValueError(
                    f"unknown inference option {p!r} (use auto|plain|fast, then prefix, no-prefix, merge, no-merge, "
                    f"{'/'.join(BATCHINGS)}, compile[={'|'.join(COMPILE_MODES)}], attn=<{'|'.join(ATTNS)}>, "
                    "tokens=<n>, min-prefix=<n>)")
        return opts

    @classmethod
    def plain(cls) -> "InferenceOptions":
        """The unoptimised path: length-sorted fixed-size batches, adapter unmerged, no prefix reuse."""
        return cls(batching="sorted", prefix=False, merge_lora=False, compile=None)

    @classmethod
    def fast(cls) -> "InferenceOptions":
        return cls(batching="bucket", prefix=True, merge_lora=True)

    def resolved(self, device: str) -> "InferenceOptions":
        """Undecided fields filled in for ``device``: the fast path on CUDA, the plain one elsewhere."""
        cuda = str(device).startswith("cuda")
        return replace(self,
                       batching=self.batching or ("bucket" if cuda else "sorted"),
                       prefix=cuda if self.prefix is None else self.prefix,
                       merge_lora=cuda if self.merge_lora is None else self.merge_lora)

    def describe(self) -> str:
        bits = [self.batching or "auto batching"]
        bits.append("prefix reuse" if self.prefix else "no prefix reuse")
        bits.append("LoRA merged" if self.merge_lora else "LoRA unmerged")
        if self.attn:
            bits.append(self.attn)
        if self.compile:
            bits.append(f"compiled ({self.compile})")
        return ", ".join(bits)


# --------------------------------------------------------------------------- planning (no torch)


def common_prefix_len(a, b) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class PrefixGroup:
    """Prompts ``members`` (indices) sharing their first ``prefix`` tokens (each has at least one more)."""

    prefix: int
    members: list[int]


def prefix_groups(seqs: list, min_prefix: int = 16, max_members: int = 64) -> tuple[list[PrefixGroup], list[int]]:
    """Group token sequences by long common prefixes: (groups of two or more, indices left alone).

    The sequences are sorted lexicographically, so sequences with a common
    prefix are neighbours; a run of neighbours becomes one group while adding
    the next one does not lower the tokens saved, ``(members - 1) * prefix``,
    and the common prefix stays at least ``min_prefix`` tokens. A group's
    prefix is cut to leave every member at least one token of its own (the
    last position's logits come from the suffix pass). Any grouping gives the
    same logits; this one only decides how much is saved.
    """
    order = sorted(range(len(seqs)), key=lambda i: tuple(seqs[i]))
    groups: list[PrefixGroup] = []
    alone: list[int] = []
    cur: list[int] = []
    cur_p = 0

    def close():
        if len(cur) >= 2:
            groups.append(PrefixGroup(cur_p, list(cur)))
        else:
            alone.extend(cur)

    for i in order:
        if cur:
            lcp = min(cur_p, common_prefix_len(seqs[cur[-1]], seqs[i]))
            lcp = min(lcp, len(seqs[i]) - 1, min(len(seqs[j]) for j in cur) - 1)
            saved_now = (len(cur) - 1) * cur_p if len(cur) > 1 else 0
            if lcp >= min_prefix and len(cur) < max_members and len(cur) * lcp >= saved_now:
                cur.append(i)
                cur_p = lcp
                continue
            close()
        cur, cur_p = [i], len(seqs[i])
    if cur:
        close()
    return groups, sorted(alone)


def row_batches(lengths: list[int], batching: str, batch_size: int, budget: int | None = None,
                max_rows: int | None = None) -> list[list[int]]:
    """Indices of rows per forward pass. ``input``: in order, ``batch_size`` each; ``sorted``: sorted by
    length, ``batch_size`` each; ``bucket``: sorted by length, as many rows as keep rows x longest row
    within ``budget`` tokens (at least one row, at most ``max_rows``)."""
    n = len(lengths)
    if batching == "input":
        order = list(range(n))
    else:
        order = [int(i) for i in np.argsort(lengths, kind="stable")]
    if batching != "bucket":
        return [order[i:i + batch_size] for i in range(0, n, batch_size)]
    budget = budget or batch_size * max(1, math.ceil(sum(lengths) / max(n, 1)))
    max_rows = max_rows or 4 * batch_size
    out, cur = [], []
    for i in order:  # ascending: the new row is the longest so far
        if cur and ((len(cur) + 1) * lengths[i] > budget or len(cur) >= max_rows):
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def group_batches(groups: list[PrefixGroup], lengths: list[int], budget: int,
                  max_rows: int) -> list[list[PrefixGroup]]:
    """Prefix groups per (prefix pass, suffix pass): sorted by prefix length, as many groups as keep
    ``groups x longest prefix + suffix rows x longest suffix`` within ``budget`` tokens."""
    todo = sorted(groups, key=lambda g: (g.prefix, max(lengths[j] - g.prefix for j in g.members)))
    out, cur = [], []
    pmax = smax = rows = 0
    for g in todo:
        gp, gs = g.prefix, max(lengths[j] - g.prefix for j in g.members)
        np_, ns, nr = max(pmax, gp), max(smax, gs), rows + len(g.members)
        if cur and ((len(cur) + 1) * np_ + nr * ns > budget or nr > max_rows):
            out.append(cur)
            cur, pmax, smax, rows = [], 0, 0, 0
            np_, ns, nr = gp, gs, len(g.members)
        cur.append(g)
        pmax, smax, rows = np_, ns, nr
    if cur:
        out.append(cur)
    return out


# --------------------------------------------------------------------------- forward passes (torch)


class Counters(dict):
    """What the forward passes did: ``forwards``, ``rows``, ``tokens`` (real tokens run through the model),
    ``slots`` (tokens including padding), ``attn_pairs`` (causal query-key pairs over real tokens),
    ``logit_rows``, ``prefix_rows`` / ``prefix_tokens`` (shared prefixes computed)."""

    KEYS = ("forwards", "rows", "tokens", "slots", "attn_pairs", "logit_rows", "prefix_rows", "prefix_tokens")

    def __init__(self):
        super().__init__({k: 0 for k in self.KEYS})

    def add_rows(self, past: list[int], new: list[int], width: int, logits: bool) -> None:
        self["forwards"] += 1
        self["rows"] += len(new)
        self["tokens"] += sum(new)
        self["slots"] += len(new) * width
        self["attn_pairs"] += sum(n * p + n * (n + 1) // 2 for p, n in zip(past, new))
        if logits:
            self["logit_rows"] += len(new)

    def reset(self) -> None:
        for k in self.KEYS:
            self[k] = 0


def left_pad(rows: list, pad_id: int, device):
    """(ids, mask) tensors of left-padded rows."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if len(r):
            ids[i, width - len(r):] = torch.as_tensor(r, dtype=torch.long)
            mask[i, width - len(r):] = 1
    return ids.to(device), mask.to(device)


def forward_rows(fwd, rows: list, pad_id: int, device, counters: Counters | None = None):
    """(len(rows), vocab) float32 logits after each row of token ids, one left-padded forward pass,
    position ids counting real tokens only (a padded row scores as it would alone)."""
    import torch

    ids, mask = left_pad(rows, pad_id, device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        logits = fwd(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits[:, -1, :]
    if counters is not None:
        counters.add_rows([0] * len(rows), [len(r) for r in rows], ids.shape[1], True)
    return logits.float()


def forward_prefix_groups(fwd, seqs: list, groups: list[PrefixGroup], pad_id: int, device,
                          counters: Counters | None = None):
    """Logits after each member of ``groups``: one pass over the groups' shared prefixes (left-padded,
    ``use_cache``), the cache rows repeated for the members (``batch_select_indices``), one pass over the
    members' suffixes (left-padded) attending to it. Returns (member indices, (n, vocab) float32 logits).

    Positions: a prefix token counts the real tokens before it; a suffix token continues from its
    group's real prefix length. The attention mask is the prefix's padding mask followed by the suffix's,
    so padding in the middle of a row is never attended.
    """
    import torch

    prefixes = [seqs[g.members[0]][:g.prefix] for g in groups]
    p_ids, p_mask = left_pad(prefixes, pad_id, device)
    p_pos = (p_mask.cumsum(-1) - 1).clamp(min=0)
    owner, members, suffixes, p_len = [], [], [], []
    for gi, g in enumerate(groups):
        for j in g.members:
            owner.append(gi)
            members.append(j)
            suffixes.append(seqs[j][g.prefix:])
            p_len.append(g.prefix)
    s_ids, s_mask = left_pad(suffixes, pad_id, device)
    own = torch.as_tensor(owner, dtype=torch.long, device=device)
    s_pos = torch.as_tensor(p_len, dtype=torch.long, device=device)[:, None] + (s_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        out = fwd(input_ids=p_ids, attention_mask=p_mask, position_ids=p_pos, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        cache.batch_select_indices(own)  # one cache row per member
        mask = torch.cat([p_mask.index_select(0, own), s_mask], dim=1)
        logits = fwd(input_ids=s_ids, attention_mask=mask, position_ids=s_pos, past_key_values=cache,
                     use_cache=True, logits_to_keep=1).logits[:, -1, :]
    del cache, out
    if counters is not None:
        counters.add_rows([0] * len(prefixes), [len(p) for p in prefixes], p_ids.shape[1], False)
        counters["prefix_rows"] += len(prefixes)
        counters["prefix_tokens"] += sum(len(p) for p in prefixes)
        counters.add_rows(p_len, [len(s) for s in suffixes], s_ids.shape[1], True)
    return members, logits.float()


def merge_lora(model):
    """The model with a PEFT LoRA adapter merged into its weights (``merge_and_unload``); others unchanged."""
    if hasattr(model, "merge_and_unload") and hasattr(model, "peft_config"):
        return model.merge_and_unload().eval()
    return model


def set_attention(model, attn: str | None) -> str | None:
    """Switch a loaded model's attention kernel when it says which it uses; the kernel in use after."""
    cfg = getattr(model, "config", None)
    if attn and cfg is not None and getattr(cfg, "_attn_implementation", None) != attn:
        setter = getattr(model, "set_attn_implementation", None)
        if setter is not None:
            try:
                setter(attn)
            except (ValueError, ImportError):  # a kernel this model or install lacks: keep the current one
                pass
    return getattr(cfg, "_attn_implementation", None) if cfg is not None else None
