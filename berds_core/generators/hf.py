"""``hf:<model>[+<adapter>]``: a transformers causal LM, by hub id or local path.

Loading: the tokenizer and model (bf16 straight onto the GPU when there is
one, float32 on the CPU unless ``dtype`` says otherwise), an optional PEFT
LoRA adapter. Prompts go through the tokenizer's chat template with the
generation prompt; a system turn is kept when the template accepts one and
dropped when it does not (Mistral-Instruct's template has no system role),
or as ``system="keep"|"drop"`` says.

Batches are left-padded, with position ids counting real tokens only, so a
padded row scores as it would alone. How the next-token passes
(``last_logits``: judges, choice probabilities) run is ``inference``
(:mod:`berds_core.generators.hf_inference`): on CUDA by default the optimised
path (length buckets under a token budget, the shared prefix of prompts
computed once and its key/value cache extended per prompt, a LoRA adapter
merged into the weights, SDPA attention); elsewhere the plain path (batches
sorted by length, adapter unmerged). Both give the same logits up to
floating-point rounding.

``score_continuations`` (reference-text perplexity): continuations of the same
context (P.D.'s partial answers of one answer) share one pass over the context
and its key/value cache (``share_prefix``); other pairs go in length-sorted,
left-padded batches that ask the model for the logits of the continuation's
positions only (``logits_to_keep``). Vocabulary-sized logits are never
materialised over a context; ``logit_budget`` bytes bound the rows of a batch.
``score_token_ids`` does the same for token ids the caller made (DebateQA's
released P.D., which tokenises context and continuation in one call).
"""
from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from ..embeddings.models import pick_device
from ..naming import model_label
from ..net.hub import locate
from ..runtime.model_lock import model_loading
from .base import GenerationError, Generator, Messages, ScoredText, truncate_ids
from .hf_inference import (Counters, InferenceOptions, forward_prefix_groups, forward_rows, group_batches, merge_lora,
                           prefix_groups, row_batches, set_attention)


def answer_token_ids(tokenizer, word: str) -> list[int]:
    """Ids of single tokens that spell ``word`` (bare, with a leading space, SentencePiece '▁')."""
    ids: set[int] = set()
    for variant in (word, " " + word, word.lower(), " " + word.lower()):
        enc = tokenizer.encode(variant, add_special_tokens=False)
        if len(enc) == 1:
            ids.add(enc[0])
        elif enc:  # e.g. SentencePiece puts a lone '▁' first
            toks = tokenizer.convert_ids_to_tokens(enc)
            rest = [(i, t) for i, t in zip(enc, toks) if t.strip("▁Ġ ")]
            if len(rest) == 1 and rest[0][1].strip("▁Ġ ").lower() == word.lower():
                ids.add(rest[0][0])
    vocab = tokenizer.get_vocab()
    for form in (word, "▁" + word, "Ġ" + word, word.lower(), "▁" + word.lower(), "Ġ" + word.lower()):
        if form in vocab:
            ids.add(vocab[form])
    ids.discard(getattr(tokenizer, "unk_token_id", None))
    return sorted(ids)


class HFGenerator(Generator):
    backend = "hf"

    def __init__(self, model: str, adapter: str | None = None, *, device: str | None = None,
                 dtype: str | None = None, batch_size: int = 8, max_length: int = 4096, system: str = "auto",
                 logit_budget: int = 512 * 2**20, share_prefix: bool = True,
                 inference: "str | InferenceOptions | None" = None):
        super().__init__()
        if system not in ("auto", "keep", "drop"):
            raise ValueError("system must be auto, keep or drop")
        self.inference = InferenceOptions.parse(inference)  # ValueError (one line) on a bad spec
        self.fast: InferenceOptions | None = None  # resolved for the device at load
        self.counters = Counters()
        self._fwd = None
        self.model_id, self.adapter_id = model, adapter
        self.device_name, self.dtype_name = device, dtype
        self.batch_size, self.max_length, self.system = int(batch_size), int(max_length), system
        self.logit_budget = int(logit_budget)
        self.share_prefix = bool(share_prefix)
        self.commit_every = max(self.batch_size * 2, 8)
        self.model = self.tokenizer = None
        self.device = None
        self._error: str | None = None
        self._label = None

    def _name_stem(self) -> str:
        stem = f"hf-{self._label or model_label(self.model_id)}"
        if self.adapter_id:
            stem += f"+{model_label(self.adapter_id)}"
        return stem

    @classmethod
    def from_loaded(cls, model, tokenizer, label: str, **opts) -> "HFGenerator":
        """Around an already built model + tokenizer (benchmarks, notebooks, tests); ``label`` names it."""
        gen = cls(label, **opts)
        gen._label = label
        gen._adopt(model, tokenizer, str(next(model.parameters()).device))
        return gen

    # -- loading ------------------------------------------------------------
    def _adopt(self, model, tok, device: str) -> None:
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
        self.fast = self.inference.resolved(device)
        if self.fast.merge_lora:
            model = merge_lora(model)  # the adapter is fixed for this generator's life
        attn = set_attention(model, self.fast.attn)
        if attn != self.fast.attn:
            self.fast = replace(self.fast, attn=attn)
        self.model, self.tokenizer, self.device = model.eval(), tok, device
        self._fwd = model
        if self.fast.compile:
            import torch

            self._fwd = torch.compile(model, mode=self.fast.compile, dynamic=True)

    def load(self) -> "HFGenerator":
        if self.model is not None:
            return self
        if self._error:
            raise GenerationError(self._error)
        local, error = locate(self.model_id, "model")  # before importing torch: a missing model fails fast
        if error is None and self.adapter_id:
            error = locate(self.adapter_id, "adapter")[1]
        if error:
            self._error = error
            raise GenerationError(error)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = pick_device(self.device_name)
        if self.dtype_name:
            dtype = getattr(torch, str(self.dtype_name).replace("torch.", ""), None)
            if not isinstance(dtype, torch.dtype):
                self._error = f"unknown dtype '{self.dtype_name}' (use float32, float16 or bfloat16)"
                raise GenerationError(self._error)
        else:
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        try:
            tok = AutoTokenizer.from_pretrained(self.model_id, local_files_only=local)
            attn = self.inference.attn
            with model_loading():
                model = AutoModelForCausalLM.from_pretrained(
                    self.model_id, dtype=dtype, local_files_only=local,
                    device_map=device if device.startswith("cuda") else None,  # straight onto the GPU
                    **({"attn_implementation": attn} if attn else {}))
        except (OSError, ValueError) as e:
            self._error = f"cannot load model '{self.model_id}': {str(e).splitlines()[0]}"
            raise GenerationError(self._error) from None
        if self.adapter_id:
            from peft import PeftModel

            try:
                with model_loading():
                    model = PeftModel.from_pretrained(model, self.adapter_id,
                                                      local_files_only=locate(self.adapter_id, "adapter")[0])
            except (OSError, ValueError) as e:
                self._error = f"cannot load adapter '{self.adapter_id}': {str(e).splitlines()[0]}"
                raise GenerationError(self._error) from None
        model.to(device)
        self._adopt(model, tok, device)
        return self

    def status(self) -> dict:
        if self.model is not None:
            return {"ok": True, "detail": f"loaded on {self.device} ({self.fast.describe()})"}
        if self._error:
            return {"ok": False, "detail": self._error}
        error = locate(self.model_id, "model")[1] or (locate(self.adapter_id, "adapter")[1] if self.adapter_id else None)
        if error:
            return {"ok": False, "detail": error}
        return {"ok": True, "detail": "not loaded yet (loads on first use)"}

    # -- prompts ------------------------------------------------------------
    def render(self, messages: Messages, add_generation_prompt: bool = True) -> str:
        """Chat messages as prompt text through the chat template (ending where the answer begins)."""
        self.load()
        tok = self.tokenizer
        msgs = list(messages)
        if self.system == "drop":
            msgs = [m for m in msgs if m["role"] != "system"]
        if not getattr(tok, "chat_template", None):
            return (tok.bos_token or "") + "\n\n".join(m["content"] for m in msgs) + "\n"
        try:
            return tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=add_generation_prompt)
        except Exception as e:  # jinja2 TemplateError: the template has no system role
            if self.system != "auto" or not any(m["role"] == "system" for m in msgs):
                raise GenerationError(f"chat template of '{self.model_id}' rejected the messages: {e}") from None
            msgs = [m for m in msgs if m["role"] != "system"]
            return tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=add_generation_prompt)

    def token_ids(self, word: str) -> list[int]:
        self.load()
        memo = self.__dict__.setdefault("_token_ids", {})
        if (self.tokenizer, word) not in memo:  # get_vocab() of a 32k vocabulary costs ~0.1 s a call
            memo[(self.tokenizer, word)] = answer_token_ids(self.tokenizer, word)
        return memo[(self.tokenizer, word)]

    def _encode_batch(self, texts: list[str]):
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, truncation=True,
                             max_length=self.max_length, add_special_tokens=False)
        enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        pos = (enc["attention_mask"].long().cumsum(-1) - 1).clamp(min=0)  # real tokens only
        return enc, pos

    def _order(self, texts: list[str]) -> np.ndarray:
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        return np.argsort(lengths, kind="stable")

    def last_logits(self, texts: list[str]):
        """(n, vocab) float32 next-token logits after each prompt text (how: ``self.fast``)."""
        import torch

        self.load()
        if not texts:
            return torch.zeros((0, 0))
        if not self.fast.prefix and self.fast.batching in ("input", "sorted"):
            return self._last_logits_plain(texts, sort=self.fast.batching == "sorted")
        return self._last_logits_fast(texts)

    def _last_logits_plain(self, texts: list[str], sort: bool = True):
        """The plain path: fixed-size batches (sorted by length, or in input order), tokenised per batch."""
        import torch

        order = self._order(texts) if sort else np.arange(len(texts))
        out = [None] * len(texts)
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            enc, pos = self._encode_batch([texts[j] for j in idx])
            with torch.inference_mode():
                logits = self._fwd(**enc, position_ids=pos, logits_to_keep=1).logits[:, -1, :].float()
            real = enc["attention_mask"].sum(-1).tolist()
            self.counters.add_rows([0] * len(real), real, enc["input_ids"].shape[1], True)
            for row, j in enumerate(idx):
                out[j] = logits[row]
        return torch.stack(out)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Each prompt's token ids as the plain path feeds them (no special tokens added, cut at ``max_length``
        on the tokenizer's truncation side)."""
        ids = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        m = self.max_length
        if getattr(self.tokenizer, "truncation_side", "right") == "left":
            return [list(r[-m:]) for r in ids]
        return [list(r[:m]) for r in ids]

    def _last_logits_fast(self, texts: list[str]):
        """Token-budget buckets, and with ``prefix`` the shared prefixes computed once per group."""
        import torch

        seqs = self.tokenize(texts)
        lengths = [len(s) for s in seqs]
        opts, pad = self.fast, self.tokenizer.pad_token_id
        budget = opts.batch_tokens or self.batch_size * max(1, -(-sum(lengths) // len(lengths)))
        max_rows = 4 * self.batch_size
        out = [None] * len(texts)
        alone = list(range(len(texts)))
        if opts.prefix:
            groups, alone = prefix_groups(seqs, opts.min_prefix, max_members=max_rows)
            for batch in group_batches(groups, lengths, budget, max_rows):
                members, logits = forward_prefix_groups(self._fwd, seqs, batch, pad, self.device, self.counters)
                for row, j in enumerate(members):
                    out[j] = logits[row]
        if alone:
            sub = [lengths[j] for j in alone]
            for idx in row_batches(sub, opts.batching, self.batch_size, budget, max_rows):
                rows = [alone[i] for i in idx]
                logits = forward_rows(self._fwd, [seqs[j] for j in rows], pad, self.device, self.counters)
                for row, j in enumerate(rows):
                    out[j] = logits[row]
        return torch.stack(out)

    def logsumexp_of(self, logits, options: list[str], normalize: bool = True) -> np.ndarray:
        """(n, k): per option, the logsumexp over its spellings of the log-probabilities over the
        vocabulary (``normalize``) or of the raw logits (differences, hence decisions, are the same)."""
        import torch

        ids = [self.token_ids(o) for o in options]
        missing = [o for o, i in zip(options, ids) if not i]
        if missing:
            raise GenerationError(f"tokenizer of '{self.model_id}' has no single token for {missing}")
        logp = torch.log_softmax(logits, dim=-1) if normalize else logits
        return torch.stack([torch.logsumexp(logp[:, i], dim=-1) for i in ids], dim=-1).cpu().numpy()

    def _choice_logprobs(self, chats: list[Messages], options: list[str]) -> np.ndarray:
        return self.logsumexp_of(self.last_logits([self.render(c) for c in chats]), options)

    # -- continuation scoring (perplexity of a given text) -------------------
    def input_limit(self, max_length: int | None = None) -> int:
        """Tokens one input may hold: ``max_length`` (default the generator's), at most the model's positions."""
        self.load()
        limit = int(max_length or self.max_length)
        cap = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        return min(limit, int(cap)) if isinstance(cap, int) and cap > 1 else limit

    def _tokenize_pairs(self, contexts: list[str], continuations: list[str], max_length: int,
                        truncation: str) -> list[tuple[list[int], list[int], int]]:
        tok = self.tokenizer
        special = set(tok.all_special_ids)
        rows = []
        for c, x in zip(contexts, continuations):
            cids = tok(c, add_special_tokens=False)["input_ids"]
            xids = tok(x, add_special_tokens=False)["input_ids"]
            ctx, cont = truncate_ids(cids, xids, max_length, truncation, keep_first=bool(cids) and cids[0] in special)
            if not ctx and cont:  # nothing to condition the first token on: it becomes context
                ctx, cont = cont[:1], cont[1:]
            rows.append((ctx, cont, len(xids)))
        return rows

    def _score_continuations(self, contexts: list[str], continuations: list[str], max_length: int | None,
                             truncation: str) -> list[ScoredText]:
        self.load()
        return self._score_rows(self._tokenize_pairs(contexts, continuations, self.input_limit(max_length), truncation))

    scores_token_ids = True

    def score_token_ids(self, contexts, continuations, n_continuation=None) -> list[ScoredText]:
        self.load()
        if len(contexts) != len(continuations) or (n_continuation is not None
                                                   and len(n_continuation) != len(contexts)):
            raise ValueError("one continuation (and length) per context")
        cap = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        rows = []
        for i, (c, x) in enumerate(zip(contexts, continuations)):
            ctx, cont = [int(t) for t in c], [int(t) for t in x]
            n_full = len(cont) if n_continuation is None else int(n_continuation[i])
            if isinstance(cap, int) and cap > 1 and len(ctx) + len(cont) > cap:
                raise GenerationError(f"an input of {len(ctx) + len(cont)} tokens exceeds the {cap} positions of "
                                      f"'{self.model_id}' (give a maximum input length)")
            if not ctx and cont:  # nothing to condition the first token on: it becomes context
                ctx, cont = cont[:1], cont[1:]
            rows.append((ctx, cont, n_full))
        return self._score_rows(rows)

    def _score_rows(self, rows: list[tuple[list[int], list[int], int]]) -> list[ScoredText]:
        """Rows of (context ids, continuation ids, the continuation's untruncated length), scored."""
        if not rows:
            return []
        out: list[ScoredText | None] = [None] * len(rows)
        groups: dict[tuple, list[int]] = {}
        for j, (ctx, cont, _) in enumerate(rows):
            groups.setdefault(tuple(ctx), []).append(j)
        rest = []
        for ctx, idx in groups.items():
            if self.share_prefix and len(idx) > 1 and all(rows[j][1] for j in idx):
                for j, got in zip(idx, self._score_shared(list(ctx), [rows[j][1] for j in idx])):
                    out[j] = ScoredText(got, rows[j][2], len(ctx), len(ctx) + len(rows[j][1]))
            else:
                rest += idx
        self._score_batched(rows, rest, out)
        return out  # type: ignore[return-value]

    def _vocab(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def _score_shared(self, ctx: list[int], conts: list[list[int]]) -> list[np.ndarray]:
        """Several continuations of ONE context: the context runs once, its key/value cache serves every
        continuation (right-padded, positions continuing the context's)."""
        import torch

        vocab, pad = self._vocab(), self.tokenizer.pad_token_id
        with torch.inference_mode():
            first = self.model(input_ids=torch.tensor([ctx], device=self.device), use_cache=True, logits_to_keep=1)
            head = torch.log_softmax(first.logits[0, -1].float(), dim=-1)  # predicts each continuation's first token
            past = first.past_key_values
            got: list[np.ndarray] = []
            i = 0
            while i < len(conts):
                n = len(conts[i])
                b = 1
                while (i + b < len(conts) and b < self.batch_size
                       and (b + 1) * max(n, len(conts[i + b])) * vocab * 4 <= self.logit_budget):
                    n = max(n, len(conts[i + b]))
                    b += 1
                chunk = conts[i:i + b]
                ids = torch.full((b, n), pad, dtype=torch.long)
                mask = torch.zeros((b, len(ctx) + n), dtype=torch.long)
                mask[:, :len(ctx)] = 1
                for r, c in enumerate(chunk):
                    ids[r, :len(c)] = torch.tensor(c, dtype=torch.long)
                    mask[r, len(ctx):len(ctx) + len(c)] = 1
                pos = (len(ctx) + torch.arange(n)).unsqueeze(0).expand(b, n)
                cache = past if i + b >= len(conts) else copy.deepcopy(past)  # the last chunk may consume it
                if b > 1:
                    cache.batch_repeat_interleave(b)
                keep = torch.arange(max(1, n - 1), device=self.device)  # positions predicting tokens 2..n
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                    position_ids=pos.to(self.device), past_key_values=cache, use_cache=True,
                                    logits_to_keep=keep).logits
                for r, c in enumerate(chunk):
                    lp = [head[c[0]].reshape(1)]
                    if len(c) > 1:
                        rest = torch.log_softmax(logits[r, :len(c) - 1].float(), dim=-1)
                        lp.append(rest.gather(-1, torch.tensor(c[1:], device=rest.device).unsqueeze(-1)).squeeze(-1))
                    got.append(torch.cat(lp).double().cpu().numpy())
                i += b
        return got

    def _score_batched(self, rows: list, which: list[int], out: list) -> None:
        """Pairs with different contexts: length-sorted, left-padded batches; logits of the last positions only."""
        import torch

        if not which:
            return
        vocab, pad = self._vocab(), self.tokenizer.pad_token_id
        order = sorted(which, key=lambda j: len(rows[j][0]) + len(rows[j][1]))
        i = 0
        while i < len(order):
            batch, keep = [order[i]], len(rows[order[i]][1]) + 1
            i += 1
            while i < len(order) and len(batch) < self.batch_size:
                k2 = max(keep, len(rows[order[i]][1]) + 1)
                if (len(batch) + 1) * k2 * vocab * 4 > self.logit_budget:
                    break
                batch.append(order[i])
                keep = k2
                i += 1
            width = max(len(rows[j][0]) + len(rows[j][1]) for j in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, j in enumerate(batch):
                seq = rows[j][0] + rows[j][1]
                ids[r, width - len(seq):] = torch.tensor(seq, dtype=torch.long)
                mask[r, width - len(seq):] = 1
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            ids, mask, pos = ids.to(self.device), mask.to(self.device), pos.to(self.device)
            keep = min(keep, width)
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos,
                                    logits_to_keep=keep).logits
                for r, j in enumerate(batch):
                    ctx, cont, n_full = rows[j]
                    n = len(cont)
                    if n:
                        lp = torch.log_softmax(logits[r, keep - n - 1:keep - 1].float(), dim=-1)
                        got = lp.gather(-1, ids[r, width - n:].unsqueeze(-1)).squeeze(-1).double().cpu().numpy()
                    else:
                        got = np.zeros(0)
                    out[j] = ScoredText(got, n_full, len(ctx), len(ctx) + n)

    def _generate(self, chats: list[Messages], max_new_tokens: int, temperature: float) -> list[str]:
        import torch

        self.load()
        texts = [self.render(c) for c in chats]
        order = self._order(texts)
        out = [""] * len(texts)
        pad = self.tokenizer.pad_token_id
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            enc, _ = self._encode_batch([texts[j] for j in idx])
            kw = dict(max_new_tokens=max_new_tokens, pad_token_id=pad)
            kw.update(do_sample=True, temperature=temperature) if temperature > 0 else kw.update(do_sample=False)
            with torch.inference_mode():
                gen = self.model.generate(**enc, **kw)
            width = enc["input_ids"].shape[1]
            for row, j in enumerate(idx):
                out[j] = self.tokenizer.decode(gen[row, width:], skip_special_tokens=True)
        return out
