"""Tiny random causal LMs (Llama / Mistral) with a real tokenizer, built on disk for tests.

    from tiny_models import make_tiny_causal_lm, make_tiny_lora_adapter
    path = make_tiny_causal_lm(tmp_path)            # folder loadable by AutoModelForCausalLM/AutoTokenizer
    gpt2 = make_tiny_causal_lm(tmp_path, arch="gpt2")   # GPT-2-shaped, no chat template (like GPT-2)
    copy = make_tiny_copy_lm(tmp_path)              # a GPT-2 built to favour tokens seen in its context
    chatml = make_tiny_chatml_lm(tmp_path)          # Qwen2-Instruct's ChatML template, no BOS
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
# Mistral-style turns; a leading system turn goes into the first user turn (as newer Mistral and Llama-2
# templates do), so the template accepts a system role.
CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] + '\n\n' %}"
    "{% set msgs = messages[1:] %}{% else %}{% set system = '' %}{% set msgs = messages %}{% endif %}"
    "{{ bos_token }}{% for m in msgs %}{% if m['role'] == 'user' %}[INST] {% if loop.first %}{{ system }}{% endif %}"
    "{{ m['content'] }} [/INST]{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)
_WORDS = """Yes No yes no the a an of to in and or is are was be it that this for on with as by not
document perspective supports support does do should would could can will you your we they he she
question answer passage text about over from at more most less many much some all any new good bad
people government law ban free speech school children health money tax war peace country state
world life work time year day science technology energy climate water food art music sport animal
""".split()


def _vocab(extra_text: str = "") -> dict[str, int]:
    from berds_core.judges.prompts import ONE_SHOT_TEMPLATE, STUDIO_EXAMPLE, STUDIO_INSTRUCTION

    words = list(SPECIALS) + ["[", "]", "INST", "[/"]
    source = " ".join([STUDIO_INSTRUCTION, STUDIO_EXAMPLE["document"], STUDIO_EXAMPLE["perspective"],
                       ONE_SHOT_TEMPLATE, " ".join(_WORDS), extra_text])
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
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    path = Path(tmp_path) / f"tiny-{arch}-{seed}"
    path.mkdir(parents=True, exist_ok=True)
    tok = make_tiny_tokenizer(path, extra_text, chat_template=arch != "gpt2")
    if arch == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(vocab_size=len(tok), n_positions=1024, n_embd=hidden, n_layer=layers, n_head=4,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        return _save_random(GPT2LMHeadModel, cfg, path, seed)
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
    return _save_random(cls, cfg, path, seed)


def _save_random(cls, cfg, path: Path, seed: int) -> Path:
    """``cls(cfg)`` with seeded random weights, saved to ``path``."""
    import torch

    torch.manual_seed(seed)
    model = cls(cfg)
    with torch.no_grad():  # larger random weights so Yes/No logits differ visibly between prompts
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(str(path))
    return path


def make_tiny_lora_adapter(model_path, out_path, seed: int = 1, r: int = 4, std: float = 0.5) -> Path:
    """A PEFT LoRA adapter for the tiny model with random NON-zero B (std ``std``, so it changes the logits)."""
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
                p.normal_(0.0, std)
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


# Qwen2-Instruct's ChatML template as published with the model (adds a default system turn; no BOS).
CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def make_tiny_chatml_lm(tmp_path, seed: int = 0, hidden: int = 32, layers: int = 2, extra_text: str = "") -> Path:
    """A tiny random Llama with a word-level tokenizer and Qwen2-Instruct's ChatML template: special tokens
    ``<|im_start|>``, ``<|im_end|>`` (EOS) and ``<|endoftext|>`` (pad), no BOS. Returns the folder.
    (Llama-shaped: transformers would load a word-level tokenizer of a ``qwen2`` folder as Qwen2's BPE.)"""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = Path(tmp_path) / f"tiny-chatml-{seed}"
    path.mkdir(parents=True, exist_ok=True)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {w: i for i, w in enumerate(specials + [w for w in _vocab("system You are helpful assistant user "
                                                                       + extra_text) if w not in specials])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(specials)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   unk_token="<unk>")
    fast.chat_template = CHATML_TEMPLATE
    fast.save_pretrained(str(path))
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024, bos_token_id=None,
                      eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, tie_word_embeddings=False)
    return _save_random(LlamaForCausalLM, cfg, path, seed)


# --------------------------------------------------------------------------- the real Mistral v1 tokenizer

# Mistral-7B-Instruct-v0.2's chat template as published with the model (no system role: a system turn raises).
MISTRAL_V02_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
)


def mistral_v1_model_file() -> Path:
    """Mistral's v1 SentencePiece model (32000 pieces) as shipped in the ``mistral-common`` package."""
    import mistral_common

    return Path(mistral_common.__file__).parent / "data" / "tokenizer.model.v1"


def make_mistral_v1_tokenizer(path, chat_template: str = MISTRAL_V02_TEMPLATE, model_file=None):
    """Save Mistral-7B-Instruct's tokenizer, built from the real v1 SentencePiece model, to ``path``.

    The folder gets ``tokenizer.model`` plus the fast ``tokenizer.json`` converted from it (what vLLM
    and transformers load) and the chat template. Returns the tokenizer. ``model_file``: the
    SentencePiece file to use (default: the one shipped in ``mistral-common``).
    """
    import json
    import shutil

    from transformers import AutoTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(model_file or mistral_v1_model_file(), path / "tokenizer.model")
    (path / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "legacy": True, "add_bos_token": True, "add_eos_token": False}))
    tok = AutoTokenizer.from_pretrained(str(path))
    if len(tok) != 32000:
        raise RuntimeError(f"Mistral v1 tokenizer has {len(tok)} tokens, expected 32000")
    tok.chat_template = chat_template
    tok.save_pretrained(str(path))
    return tok


CALIBRATION = [("Cats are good pets and keep mice away.", "Cats are good pets."),
               ("The city banned cars from its centre last year.", "Cars should be banned from city centres."),
               ("Nuclear plants emit little carbon but leave waste.", "Nuclear power should be expanded."),
               ("Homework takes time from play and sleep.", "Homework should be abolished."),
               ("Taxes on sugar reduce what children drink.", "Sugar taxes work."),
               ("Voting at sixteen raised turnout in Austria.", "The voting age should be lowered."),
               ("Zoos fund research and breed endangered species.", "Zoos are cruel."),
               ("Remote work saves commuting time for employees.", "Remote work is better for workers.")]


def make_tiny_mistral_v1(path, *, hidden: int = 64, layers: int = 2, heads: int = 2, seed: int = 0,
                         chat_template: str = MISTRAL_V02_TEMPLATE, answer_head: bool = False) -> Path:
    """A tiny random Mistral (real v1 tokenizer, 32000-token vocabulary) saved to ``path`` in float32.

    ``answer_head``: shape the output layer so that "▁Yes" and "▁No" are by far the most likely first
    answer tokens after ``[/INST]`` (every other output row is zero; the embedding of the template's
    last token, "]", is a large constant direction that both answer rows read), and which of the two
    wins depends on the prompt: the Yes-minus-No row is orthogonal to the mean final hidden state of a
    few calibration prompts (BERDS prompt, system turn dropped) and scaled to a spread of ~2 logits.
    A server's top logprobs then hold both words, with P(Yes) varying between pairs.
    """
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    path = Path(path)
    tok = make_mistral_v1_tokenizer(path, chat_template)
    cfg = MistralConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=1,
                        head_dim=hidden // heads, max_position_embeddings=2048, sliding_window=None,
                        tie_word_embeddings=False, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    model = MistralForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.1 if answer_head else 0.2)
        if answer_head:
            from berds_core.judges.prompts import messages

            yes, no = tok.convert_tokens_to_ids("▁Yes"), tok.convert_tokens_to_ids("▁No")
            last = tok.convert_tokens_to_ids("]")
            emb, head = model.model.embed_tokens.weight, model.lm_head.weight
            emb[last] = 0.0
            emb[last, 0] = 40.0  # dominates the last position's residual stream along dimension 0
            head.zero_()
            states = []
            for doc, st in CALIBRATION:
                text = tok.apply_chat_template(messages(doc, st, 0, system=False), tokenize=False,
                                               add_generation_prompt=True)
                ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
                states.append(model.model(input_ids=ids).last_hidden_state[0, -1])
            H = torch.stack(states)[:, 1:]
            mu = H.mean(0) / H.mean(0).norm()
            g = torch.Generator().manual_seed(seed + 1)
            d = torch.randn(hidden - 1, generator=g)
            d -= (d @ mu) * mu
            d *= 2.0 / float((H @ d).std())
            head[yes, 0] = head[no, 0] = 4.0  # both answers far above every other token
            head[yes, 1:] = d / 2
            head[no, 1:] = -d / 2
    model.save_pretrained(str(path))
    return path


# ---------------------------------------------------------------- tiny sentence encoders (issue 42)
_ENCODER_TEXT = " ".join(_WORDS) + """ Nuclear power cuts carbon emissions but leaves waste that stays
dangerous for thousands of years. School uniforms reduce bullying, say some teachers; others say they limit
self-expression. Zoos breed endangered species and fund research. Taxes on sugar change what children drink.
0 1 2 3 4 5 6 7 8 9 . , ; : ! ? ' " ( ) - — « » é ü ö ñ ç % $ # @ & *"""


def _wordpiece_tokenizer(max_length: int):
    """A BERT-style WordPiece tokenizer ([CLS] ... [SEP], lower-casing normaliser) over a small vocabulary."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = sorted({w.lower() for w in re.findall(r"\w+|[^\w\s]", _ENCODER_TEXT)})
    pieces = sorted({c for w in words for c in w} | {f"##{c}" for w in words for c in w})
    vocab = {t: i for i, t in enumerate(dict.fromkeys(specials + words + pieces))}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_length)


def _bpe_tokenizer(max_length: int):
    """A RoBERTa-style byte-level BPE tokenizer (<s> ... </s>, <pad> = 1), trained here on a few sentences:
    whitespace is part of its tokens, so leading spaces and case change the ids."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([_ENCODER_TEXT] * 3, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    tok = bpe._tokenizer
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")), add_prefix_space=False)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", cls_token="<s>", sep_token="</s>", mask_token="<mask>",
                                   model_max_length=max_length)
    fast.model_input_names = ["input_ids", "attention_mask"]
    return fast


def make_tiny_sentence_encoder(path, arch: str = "bert", *, hidden: int = 32, layers: int = 2, seed: int = 0,
                               max_seq_length: int = 48, pooling: str = "mean", normalize: bool = True) -> Path:
    """A tiny random sentence-transformers model saved to ``path``: Transformer (``bert``: BertModel with a
    WordPiece tokenizer; ``roberta``: RobertaModel with a byte-level BPE tokenizer, padding id 1) + Pooling
    (``mean`` | ``cls``) [+ Normalize], truncating at ``max_seq_length`` tokens. Loadable by
    ``SentenceTransformer(path)`` and the studio's encoders like any hub model; weights random (seeded)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    try:  # sentence-transformers 6 (5: sentence_transformers.models)
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:
        from sentence_transformers import models

    path = Path(path)
    hf = path.parent / f"{path.name}-hf"
    hf.mkdir(parents=True, exist_ok=True)
    common = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=2 * hidden,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if arch == "bert":
        tok = _wordpiece_tokenizer(max_seq_length)
        cfg, cls = BertConfig(vocab_size=len(tok), max_position_embeddings=max_seq_length + 8,
                              pad_token_id=tok.pad_token_id, **common), BertModel
    elif arch == "roberta":
        tok = _bpe_tokenizer(max_seq_length)
        cfg, cls = RobertaConfig(vocab_size=len(tok), max_position_embeddings=max_seq_length + 8, type_vocab_size=1,
                                 pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                                 eos_token_id=tok.eos_token_id, **common), RobertaModel
    else:
        raise ValueError(f"arch must be bert or roberta, not {arch!r}")
    torch.manual_seed(seed)
    model = cls(cfg).eval()
    with torch.no_grad():  # larger random weights: texts get clearly different vectors
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(str(hf))
    tok.save_pretrained(str(hf))
    word = models.Transformer(str(hf), max_seq_length=max_seq_length)
    dim = (getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension)()
    modules = [word, models.Pooling(dim, pooling_mode=pooling)] + ([models.Normalize()] if normalize else [])
    SentenceTransformer(modules=modules, device="cpu").save(str(path))
    return path
