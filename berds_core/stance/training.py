"""Training the stance network on :class:`~berds_core.stance.examples.Example` lists (CPU friendly, resumable).

``train(examples, opts, out)`` fine-tunes LoRA adapters and the head and
writes a weights file (:mod:`.network`). The recipe (``DEFAULTS``) was fixed
before any run, not tuned: LoRA rank 16 on every Linear layer of all six
layers, inputs of up to 160 word pieces, 2 epochs, AdamW 5e-4 with 6 %
warm-up and linear decay, batches of 32 of similar length, bfloat16 autocast
where the CPU has native bf16 matmuls. The loss is the negative log of the
probability of the example's allowed classes (a full label: its class; a
partial one, "oppose or unrelated": the sum of the two), times the example's
weight (``source_weights``: the human pairs count ``3`` each, every other
example 1).

A checkpoint (adapters, head, optimiser, step) is written every
``checkpoint_every`` steps next to the output, so an interrupted training
resumes where it stopped; it is removed once the weights are written.

``stop_at``: write the weights after that many steps of the same schedule
(the learning rate still planned for all of the recipe's steps), keeping the
checkpoint so the training can go on later; the weights' ``meta`` says
``steps_done`` and ``steps``. It is how a training sized for a faster machine
is cut to what a shared CPU allows without changing the recipe.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable
from ..embeddings.models import cpu_has_fast_bf16, resolve_model
from . import network

DEFAULTS = {"layers": 6, "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.1, "max_length": 160, "epochs": 2.0,
            "lr": 5e-4, "weight_decay": 0.01, "warmup": 0.06, "batch_size": 32, "seed": 0,
            "source_weights": {"human": 3.0}}


def _log(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def signature(examples, opts: dict, base: str | None = None) -> str:
    """A short hash of the training set and options: a model trained on the same is the same model."""
    h = hashlib.sha1(json.dumps({k: opts[k] for k in sorted(opts)}, sort_keys=True).encode())
    h.update(str(base or "").encode())
    for e in examples:
        h.update(f"{e.qid}\x1f{e.target}\x1f{e.text}\x1f{e.allowed}\x1f{e.weight}\x1e".encode())
    return h.hexdigest()[:12]


def tokenize(tok, examples, max_length: int) -> list[dict]:
    out = []
    for i in range(0, len(examples), 512):
        chunk = examples[i:i + 512]
        enc = tok([e.target for e in chunk], [e.text for e in chunk], truncation="longest_first",
                  max_length=max_length)
        for j in range(len(chunk)):
            out.append({k: enc[k][j] for k in enc.keys()})
    return out


def collate(items: list[dict], pad_id: int, multiple: int = 16):
    """Padded tensors; lengths rounded up to a ``multiple`` so that few distinct shapes reach the kernels
    (oneDNN keeps a primitive per shape: a new length per batch grows the process by gigabytes)."""
    import torch

    n = max(len(it["input_ids"]) for it in items)
    n = -(-n // multiple) * multiple
    ids = torch.full((len(items), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(items), n), dtype=torch.long)
    types = torch.zeros((len(items), n), dtype=torch.long)
    for i, it in enumerate(items):
        L = len(it["input_ids"])
        ids[i, :L] = torch.tensor(it["input_ids"])
        mask[i, :L] = 1
        if "token_type_ids" in it:
            types[i, :L] = torch.tensor(it["token_type_ids"])
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def epoch_batches(lengths: list[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Shuffled batches of similar-length examples (sorted within windows of 50 batches)."""
    rng = random.Random(f"{seed}-{epoch}")
    order = list(range(len(lengths)))
    rng.shuffle(order)
    window = batch_size * 50
    batches = []
    for w in range(0, len(order), window):
        part = sorted(order[w:w + window], key=lambda i: lengths[i])
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def partial_nll(logits, allowed_mask, weights):
    """Weighted mean of -log P(allowed classes)."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    ll = torch.logsumexp(logp.masked_fill(~allowed_mask, float("-inf")), dim=-1)
    return -(ll * weights).sum() / weights.sum()


def use_bf16() -> bool:
    return cpu_has_fast_bf16()


def _device_name(device: str) -> str:
    """What trained the weights, for their ``meta`` (the GPU's name on CUDA)."""
    import torch

    if torch.device(device).type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(torch.device(device))})"
    return device


@dataclass(frozen=True)
class TrainRun:
    """How a training run goes, beside its hyperparameters (``opts``): ``threads`` (0: torch's choice), the
    ``version`` and ``meta`` written into the weights file, ``progress`` (a line callback; None: silent), a
    checkpoint every ``checkpoint_every`` steps at ``ckpt`` (default: next to the weights file), bf16
    ``autocast`` (None: where the CPU has it; always on CUDA), ``stop_at`` (stop after that many steps), the
    torch ``device`` it trains on ("cpu" or "cuda": the same loop, the weights written to the CPU) and
    ``base_dir``, a folder the base network is read from instead of the packaged one (a GPU machine without
    the package: a copy of the same model; the weights still record ``base``)."""

    threads: int = 0
    version: str = "v1"
    meta: dict | None = None
    progress: Callable | None = _log
    checkpoint_every: int = 100
    autocast: bool | None = None
    stop_at: int | None = None
    ckpt: str | Path | None = None
    device: str = "cpu"
    base_dir: str | None = None


def train(examples, opts: dict | None = None, out=None, *, base: str | None = None, run: TrainRun | None = None,
          **run_fields) -> Path:
    """Train on ``examples`` and write the weights file ``out``; ``run``: :class:`TrainRun` (or its fields as
    keywords); resumes from its checkpoint (see the module docstring)."""
    r = replace(run or TrainRun(), **run_fields)
    threads, version, meta, progress = r.threads, r.version, r.meta, r.progress
    checkpoint_every, autocast, stop_at, ckpt = r.checkpoint_every, r.autocast, r.stop_at, r.ckpt
    import torch
    from transformers import AutoTokenizer

    opts = {**DEFAULTS, **(opts or {})}
    out = Path(out)
    if threads:
        torch.set_num_threads(threads)
    device = r.device
    base_path = r.base_dir or resolve_model(base)
    tok = AutoTokenizer.from_pretrained(base_path)
    torch.manual_seed(int(opts["seed"]))
    net = network.add_lora(network.build_network(base_path, opts["layers"]), int(opts["lora_r"]),
                           int(opts["lora_alpha"]), float(opts["lora_dropout"])).to(device)
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=float(opts["lr"]), weight_decay=float(opts["weight_decay"]))
    items = tokenize(tok, examples, int(opts["max_length"]))
    lengths = [len(it["input_ids"]) for it in items]
    bs = int(opts["batch_size"])
    per_epoch = -(-len(items) // bs)
    steps = max(1, int(round(float(opts["epochs"]) * per_epoch)))
    warm = max(1, int(float(opts["warmup"]) * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps))
    sw = opts.get("source_weights") or {}
    W = torch.tensor([float(e.weight) * float(sw.get(e.source, 1.0)) for e in examples])
    M = torch.zeros((len(examples), network.N_CLASSES), dtype=torch.bool)
    for i, e in enumerate(examples):
        M[i, list(e.allowed)] = True
    ckpt = Path(ckpt) if ckpt else out.with_name(out.name + ".ckpt.pt")
    sig = signature(examples, opts, base)
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location=device)
        if state.get("signature") == sig:
            net.load_state_dict(state["net"], strict=False)
            opt.load_state_dict(state["opt"])
            sched.load_state_dict(state["sched"])
            step = int(state["step"])
            if progress:
                progress(f"resumed at step {step}/{steps} from {ckpt.name}")
    ac = (device != "cpu" or use_bf16()) if autocast is None else autocast
    net.train()
    t0, done0 = time.time(), step
    end = steps if stop_at is None else max(0, min(steps, int(stop_at)))
    if step > end:
        raise ValueError(f"checkpoint {ckpt.name} is at step {step}, past stop_at {end}")
    while step < end:
        epoch, within = divmod(step, per_epoch)
        batches = epoch_batches(lengths, bs, int(opts["seed"]), epoch)
        for b in batches[within:]:
            enc = {k: v.to(device) for k, v in collate([items[i] for i in b], tok.pad_token_id).items()}
            torch.manual_seed(int(opts["seed"]) * 100003 + step)  # dropout masks reproducible on resume
            if ac:
                with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
                    logits = net(**enc)
            else:
                logits = net(**enc)
            loss = partial_nll(logits, M[b].to(device), W[b].to(device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if progress and step % 50 == 0:
                rate = (step - done0) * bs / max(1e-9, time.time() - t0)
                progress(f"step {step}/{steps} loss {loss.item():.3f} ({rate:.1f} examples/s)")
            if checkpoint_every and (step % checkpoint_every == 0 or step == end) and step < steps:
                trainable = {k: v for k, v in net.state_dict().items() if "lora_" in k or k.startswith("head.")}
                tmp = ckpt.with_name(ckpt.name + ".tmp")
                torch.save({"signature": sig, "net": trainable, "opt": opt.state_dict(),
                            "sched": sched.state_dict(), "step": step}, tmp)
                os.replace(tmp, ckpt)
            if step >= end:
                break
    net.eval()
    net.to("cpu")
    config = {"version": version, "base": base, "layers": opts["layers"], "lora_r": int(opts["lora_r"]),
              "lora_alpha": int(opts["lora_alpha"]), "max_length": int(opts["max_length"]),
              "classes": ["support", "oppose", "unrelated"], "input": "target [SEP] passage (title. text)",
              "pooling": "mean"}
    info = {"options": opts, "examples": len(examples), "steps": steps, "steps_done": step, "signature": sig,
            "train_seconds": round(time.time() - t0), "device": _device_name(device),
            **({"base_dir": Path(r.base_dir).name} if r.base_dir else {}), **(meta or {})}
    path = network.save_weights(out, network.lora_arrays(net), net.head.weight.detach().numpy(),
                                net.head.bias.detach().numpy(), config, {}, info)
    if ckpt.exists() and step >= steps:
        ckpt.unlink()
    return path
