"""``hf:<model>[+<adapter>]``: a transformers causal LM as judge, one forward pass per pair.

The paper's prompt goes through the tokenizer's chat template; the decision
is read from the next-token logits at the last position: the probability of
support is the softmax over the "Yes" and "No" logits (each the logsumexp
over the tokenisations of the word, with and without a leading space). No
generation. Left padding, batches sorted by length, bf16 on GPU, an optional
PEFT LoRA adapter. The BERDS evaluator is
``hf:mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator``.
"""
from __future__ import annotations

import os

import numpy as np

from .base import Judge, JudgeError, model_label
from .prompts import PROMPT_VERSION, messages

BERDS_EVALUATOR = "mistralai/Mistral-7B-Instruct-v0.2+timchen0618/Mistral_BERDS_evaluator"


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
    unk = getattr(tokenizer, "unk_token_id", None)
    ids.discard(unk)
    return sorted(ids)


def _is_local(path: str) -> bool:
    return os.path.isdir(path)


class HFJudge(Judge):
    backend = "hf"

    def __init__(self, model: str, adapter: str | None = None, *, shot: int = 0, device: str | None = None,
                 dtype: str | None = None, batch_size: int = 8, threshold: float = 0.5,
                 max_length: int = 2048):
        super().__init__(threshold)
        if shot not in (0, 1):
            raise ValueError("shot must be 0 or 1")
        self.model_id, self.adapter_id, self.shot = model, adapter, int(shot)
        self.device, self.dtype_name = device, dtype
        self.batch_size, self.max_length = int(batch_size), int(max_length)
        self.commit_every = max(self.batch_size * 8, 64)
        self._model = self._tok = None
        self._yes = self._no = None
        self._error: str | None = None

    def _name_stem(self) -> str:
        stem = f"hf-{model_label(self.model_id)}"
        if self.adapter_id:
            stem += f"+{model_label(self.adapter_id)}"
        return f"{stem}-{PROMPT_VERSION}-{self.shot}shot"

    @classmethod
    def from_loaded(cls, model, tokenizer, label: str, **opts) -> "HFJudge":
        """A judge around an already built model + tokenizer (benchmarks, notebooks); ``label`` names it."""
        judge = cls(label, **opts)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
        judge._yes, judge._no = answer_token_ids(tokenizer, "Yes"), answer_token_ids(tokenizer, "No")
        if not judge._yes or not judge._no:
            raise JudgeError(f"tokenizer of '{label}' has no single token for 'Yes'/'No'")
        judge._model, judge._tok = model.eval(), tokenizer
        judge._device = str(next(model.parameters()).device)
        return judge

    # -- loading --------------------------------------------------------
    def load(self):
        if self._model is not None:
            return self
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..embed import pick_device

        device = pick_device(self.device)
        if self.dtype_name:
            dtype = getattr(torch, str(self.dtype_name).replace("torch.", ""), None)
            if not isinstance(dtype, torch.dtype):
                self._error = f"unknown dtype '{self.dtype_name}' (use float32, float16 or bfloat16)"
                raise JudgeError(self._error)
        else:
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        try:
            tok = AutoTokenizer.from_pretrained(self.model_id, local_files_only=_is_local(self.model_id))
            model = AutoModelForCausalLM.from_pretrained(
                self.model_id, dtype=dtype, local_files_only=_is_local(self.model_id),
                device_map=device if device.startswith("cuda") else None)  # load straight onto the GPU
        except (OSError, ValueError) as e:
            self._error = f"cannot load model '{self.model_id}': {str(e).splitlines()[0]}"
            raise JudgeError(self._error) from None
        if self.adapter_id:
            from peft import PeftModel

            try:
                model = PeftModel.from_pretrained(model, self.adapter_id,
                                                  local_files_only=_is_local(self.adapter_id))
            except (OSError, ValueError) as e:
                self._error = f"cannot load adapter '{self.adapter_id}': {str(e).splitlines()[0]}"
                raise JudgeError(self._error) from None
        model.to(device).eval()
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
        yes, no = answer_token_ids(tok, "Yes"), answer_token_ids(tok, "No")
        if not yes or not no:
            self._error = f"tokenizer of '{self.model_id}' has no single token for 'Yes'/'No'"
            raise JudgeError(self._error)
        self._model, self._tok, self._yes, self._no, self._device = model, tok, yes, no, device
        return self

    def status(self) -> dict:
        if self._model is not None:
            return {"ok": True, "detail": f"loaded on {self._device}"}
        if self._error:
            return {"ok": False, "detail": self._error}
        return {"ok": True, "detail": "not loaded yet (loads on first use)"}

    # -- scoring --------------------------------------------------------
    def render(self, document: str, perspective: str) -> str:
        """The full prompt text for one pair (chat template + generation prompt)."""
        return self.render_messages(messages(document, perspective, self.shot))

    def render_messages(self, msgs: list[dict]) -> str:
        """Chat messages as the model's prompt text, ending where the answer begins."""
        self.load()
        if getattr(self._tok, "chat_template", None):
            return self._tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        return (self._tok.bos_token or "") + "\n\n".join(m["content"] for m in msgs) + " "

    def yes_no_logits(self, prompts: list[str]):
        """(n, 2) float32 array of logsumexp logits of Yes and No at the last position."""
        import torch

        enc = self._tok(prompts, return_tensors="pt", padding=True, truncation=True,
                        max_length=self.max_length, add_special_tokens=False)
        enc = {k: v.to(self._device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        # positions count real tokens only, so a left-padded row scores as it would alone
        pos = (enc["attention_mask"].long().cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self._model(**enc, position_ids=pos, logits_to_keep=1).logits[:, -1, :].float()
        yes = torch.logsumexp(logits[:, self._yes], dim=-1)
        no = torch.logsumexp(logits[:, self._no], dim=-1)
        return torch.stack([yes, no], dim=-1).cpu().numpy()

    def _score(self, pairs):
        self.load()
        return self._p_yes([self.render(p, s) for p, s in pairs])

    def yes_probability(self, prompts: list[str]) -> np.ndarray:
        """P("Yes") vs "No" for free-form yes/no questions, one user turn each (not cached)."""
        self.load()
        return self._p_yes([self.render_messages([{"role": "user", "content": q}]) for q in prompts])

    def _p_yes(self, prompts: list[str]) -> np.ndarray:
        """Batches sorted by length; softmax over the (Yes, No) logits at the last position."""
        lengths = [len(self._tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        order = np.argsort(lengths, kind="stable")
        out = np.zeros(len(prompts), dtype=np.float64)
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            ln = self.yes_no_logits([prompts[j] for j in idx])
            out[idx] = 1.0 / (1.0 + np.exp(ln[:, 1] - ln[:, 0]))
        return out
