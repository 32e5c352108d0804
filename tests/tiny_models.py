"""Tiny random causal LMs (Llama / Mistral) with a real tokenizer, built on disk for tests.

    from tiny_models import make_tiny_causal_lm, make_tiny_lora_adapter
    path = make_tiny_causal_lm(tmp_path)            # folder loadable by AutoModelForCausalLM/AutoTokenizer
    gpt2 = make_tiny_causal_lm(tmp_path, arch="gpt2")   # GPT-2-shaped, no chat template (like GPT-2)
    copy = make_tiny_copy_lm(tmp_path)              # a GPT-2 built to favour tokens seen in its context
    adapter = make_tiny_lora_adapter(path, tmp_path / "lora")

The tokenizer is a word-level ``tokenizers`` model whose vocabulary holds the
words of the judge prompt, "Yes"/"No", a few hundred common words and the
Mistral-style chat template (``[INST] ... [/INST]``). Weights are random
(seeded): outputs are meaningless but deterministic. Nothing is downloaded.
"""
from __future__ import annotations

import re
from pathlib import Path

SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
    "{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)
_WORDS = """Yes No yes no the a an of to in and or is are was be it that this for on with as by not
document perspective supports support does do should would could can will you your we they he she
question answer passage text about over from at more most less many much some all any new good bad
people government law ban free speech school children health money tax war peace country state
world life work time year day science technology energy climate water food art music sport animal
""".split()


def _vocab(extra_text: str = "") -> dict[str, int]:
    from berds_core.judges.prompts import EXAMPLE, INSTRUCTION

    words = list(SPECIALS) + ["[", "]", "INST", "[/"]
    source = " ".join([INSTRUCTION, EXAMPLE["document"], EXAMPLE["perspective"], " ".join(_WORDS), extra_text])
    for tok in re.findall(r"\w+|[^\w\s]+", source):
        if tok not in words:
            words.append(tok)
    return {w: i for i, w in enumerate(words)}


def make_tiny_tokenizer(path, extra_text: str = "", chat_template: bool = True):
    """Save a word-level fast tokenizer (with a chat template unless told otherwise) to ``path``; return it."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab=_vocab(extra_text), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()  # \w+|[^\w\s]+
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>")
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(path))
    return fast


def make_tiny_causal_lm(tmp_path, arch: str = "llama", seed: int = 0, hidden: int = 32, layers: int = 2,
                        extra_text: str = "") -> Path:
    """Build a tiny random ``arch`` (llama|mistral|gpt2) causal LM + tokenizer under ``tmp_path``; return the folder.

    ``gpt2`` is GPT-2-shaped (learned positions, LayerNorm, tied embeddings) and, like GPT-2, has no chat template.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    path = Path(tmp_path) / f"tiny-{arch}-{seed}"
    path.mkdir(parents=True, exist_ok=True)
    tok = make_tiny_tokenizer(path, extra_text, chat_template=arch != "gpt2")
    if arch == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=hidden, n_layer=layers, n_head=4,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(cfg)
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0.0, 0.2)
        model.save_pretrained(str(path))
        return path
    common = dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                  num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=1024, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id, tie_word_embeddings=False)
    if arch == "llama":
        cfg, cls = LlamaConfig(**common), LlamaForCausalLM
    elif arch == "mistral":
        cfg, cls = MistralConfig(sliding_window=None, **common), MistralForCausalLM
    else:
        raise ValueError(f"arch must be llama or mistral, not {arch!r}")
    torch.manual_seed(seed)
    model = cls(cfg)
    with torch.no_grad():  # larger random weights so Yes/No logits differ visibly between prompts
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(str(path))
    return path


def make_tiny_lora_adapter(model_path, out_path, seed: int = 1, r: int = 4) -> Path:
    """A PEFT LoRA adapter for the tiny model with random NON-zero B (so it changes the logits)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(model_path))
    cfg = LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                     task_type="CAUSAL_LM")
    peft_model = get_peft_model(base, cfg)
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    out = Path(out_path)
    peft_model.save_pretrained(str(out))
    return out


def make_tiny_copy_lm(tmp_path, extra_text: str = "", dim: int = 96, strength: float = 12.0, seed: int = 0) -> Path:
    """A one-layer GPT-2 whose weights are SET (not random) so that it predicts the words of its context.

    Attention scores are all zero (queries and keys are zero), so each position
    averages the normalised embeddings of every token before it; the value and
    output maps are ``strength`` x identity, the MLP is zero, positions add
    nothing, and the unembedding is the (tied, unit-norm, random) token
    embedding. The next-token logits are therefore highest for the tokens seen
    so far: a bag-of-words "cache" language model. A text is likelier -- lower
    perplexity -- after a context that contains its words, by construction.
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    path = Path(tmp_path) / f"tiny-copy-{seed}"
    path.mkdir(parents=True, exist_ok=True)
    tok = make_tiny_tokenizer(path, extra_text, chat_template=False)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=dim, n_layer=1, n_head=4,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        emb = torch.randn(len(tok), dim, generator=g)
        model.transformer.wte.weight.copy_(emb / emb.norm(dim=1, keepdim=True))
        block = model.transformer.h[0]
        for ln in (block.ln_1, block.ln_2, model.transformer.ln_f):
            ln.weight.fill_(1.0)
        eye = torch.eye(dim)
        block.attn.c_attn.weight[:, 2 * dim:] = eye            # values = normalised embeddings
        block.attn.c_proj.weight.copy_(strength * eye)
    model.save_pretrained(str(path))
    return path
