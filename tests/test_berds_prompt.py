"""The ``berds`` prompt is the BERDS authors' prompt, token for token, under Mistral's real v1 tokenizer.

The authors' construction is written out here independently of
``berds_core.judges.prompts`` (templates copied from the paper's Table 14 as
the spec lays them out, ``␠`` marking a trailing space; their
``formulate_dialogs``; ``messages[1:]`` for the Mistral evaluator; the chat
template with the generation prompt). No model weights are downloaded: the
tokenizer is Mistral's SentencePiece model shipped in ``mistral-common``, the
model a tiny random one built here (its weights never matter for token ids).
"""
import pytest

from tiny_models import MISTRAL_V02_TEMPLATE, make_mistral_v1_tokenizer

# --------------------------------------------------------------------------- the authors' side, independently

INSTR = """Does the document support the statement? Answer with only "Yes" or "No".␠
Only consider the information provided in the document, and do not infer any additional information.␠
The document is a snippet taken from the Internet, and might exhibit support for or opposition against the statement.
If the document opposes the statement, the answer is "No". If the document does not contain relevant information about the statement, the answer is also "No".
The answer is "Yes" only if the document supports the statement, either explicitly or implicitly.
Think carefully if the document actually supports the statement, or if there is just some superficial textual overlap between the two."""

PAPER_USER = """<|im_start|>user
Document: [Doc 1]
Statement: [Doc 2]
Instruction: {instr}
Answer:
<|im_end|>
"""

PAPER_ZERO = """<|im_start|>system
You are a helpful assistant that can only answer with "Yes" or "No". Your goal is to determine if the provided document support the provided statement. Do NOT provide any explanation for your choice.␠
<|im_end|>
{user}""".replace("{user}", PAPER_USER).replace("{instr}", INSTR).replace("␠", " ")

PAPER_ONE = """<|im_start|>system
You are a helpful assistant that can only answer with "Yes" or "No". Your goal is to determine if the provided document support the provided statement. Do NOT provide any explanation for your choice. You should output the answer that best follows an instruction and an input pair.
<|im_end|>
<|im_start|>user
Document for Example 1: Why Prop. 19 is so important | rescue truth. The United States took a stab at alcohol prohibition from 1920-1933 via the United States Constitution. Almost immediately following the ratification of the Eighteenth Amendment, which outlawed alcohol, speakeasy clubs sprung up all over, effectively creating a black market and handing alcohol sales over to organized crime. During this time, our government poisoned industrial alcohol in an attempt to curb usage by scaring the American public, causing an estimated 10,000 deaths.[17] Because of the illicit drug market created by prohibition, the government could not regulate the production of alcohol, and sometimes people became ill after drinking bootlegged whiskies. The current
Statement for Example 1: Prohibition is an effective method to curb drug usage.
Instruction for Example 1: {instr}
Answer for Example 1:
<|im_end|>
<|im_start|>assistant
No
<|im_end|>
{user}""".replace("{user}", PAPER_USER).replace("{instr}", INSTR).replace("␠", " ")


def authors_formulate_dialogs(template, doc, statement):
    text = template.replace("[Doc 1]", doc).replace("[Doc 2]", statement)
    dialog = []
    for turn in text.split("<|im_end|>")[:-1]:
        turn = turn.strip("\n")
        lines = turn.split("\n")
        dialog.append({"role": lines[0][len("<|im_start|>"):], "content": "\n".join(lines[1:]).strip()})
    return dialog


def authors_ids(tok, template, ctx, statement):
    doc = ctx["text"] + " " + ctx["title"] if "title" in ctx else ctx["text"]
    messages = authors_formulate_dialogs(template, doc, statement)[1:]  # Mistral: no system message
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


# --------------------------------------------------------------------------- fixtures

CTX = {"id": "p1", "title": "Prohibition (United States)",
       "text": "Prohibition reduced alcohol consumption by about 30 percent, and cirrhosis deaths fell sharply; "
               "critics note that it also fuelled organised crime.\nA second line: 50% of \"speakeasies\" closed."}
PERSPECTIVE = "Prohibition is an effective way to reduce drinking."


@pytest.fixture(scope="module")
def mistral_dir(tmp_path_factory):
    """Real Mistral v1 tokenizer + tiny random Mistral weights (hidden 16) in one folder."""
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    path = tmp_path_factory.mktemp("mistral-v1")
    tok = make_mistral_v1_tokenizer(path)
    cfg = MistralConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                        sliding_window=None, tie_word_embeddings=False)
    torch.manual_seed(0)
    MistralForCausalLM(cfg).save_pretrained(str(path))
    return path


def our_ids(judge, ctx, statement):
    from berds_core.judges import passage_text

    text = judge.render(passage_text(ctx, judge), statement)
    enc, _ = judge.lm._encode_batch([text])  # exactly what goes into the model
    return enc["input_ids"][0].tolist()


# --------------------------------------------------------------------------- tests


def test_templates_are_the_papers_byte_for_byte():
    from berds_core.judges import prompts

    assert prompts.ZERO_SHOT_TEMPLATE == PAPER_ZERO
    assert prompts.ONE_SHOT_TEMPLATE == PAPER_ONE
    assert 'or "No". \nOnly' in prompts.ZERO_SHOT_TEMPLATE  # the trailing spaces survive


@pytest.mark.parametrize("shot", [0, 1])
def test_messages_equal_the_authors_formulate_dialogs(shot):
    from berds_core.judges.prompts import messages

    template = PAPER_ONE if shot else PAPER_ZERO
    doc = CTX["text"] + " " + CTX["title"]
    assert messages(doc, PERSPECTIVE, shot) == authors_formulate_dialogs(template, doc, PERSPECTIVE)
    assert messages(doc, PERSPECTIVE, shot, system=False) == authors_formulate_dialogs(template, doc, PERSPECTIVE)[1:]
    roles = [m["role"] for m in messages(doc, PERSPECTIVE, shot)]
    assert roles == (["system", "user", "assistant", "user"] if shot else ["system", "user"])


@pytest.mark.parametrize("shot", [0, 1])
def test_token_ids_equal_the_authors_construction(mistral_dir, shot):
    from transformers import AutoTokenizer

    from berds_core.judges import get_judge

    tok = AutoTokenizer.from_pretrained(str(mistral_dir))
    judge = get_judge(f"hf:{mistral_dir}", shot=shot, device="cpu")
    assert judge.prompt.name == "berds" and judge.keep_system is False  # a Mistral model: system turn dropped
    ours = our_ids(judge, CTX, PERSPECTIVE)
    theirs = authors_ids(tok, PAPER_ONE if shot else PAPER_ZERO, CTX, PERSPECTIVE)
    assert ours == theirs
    assert ours[0] == tok.bos_token_id and ours.count(tok.bos_token_id) == 1
    text = tok.decode(ours)
    assert "Prohibition (United States)" in text.split("Statement:")[0]  # the title follows the text
    assert text.rstrip().endswith("Answer: [/INST]")
    # the same ids through mistral-common's own v1 encoder (a third implementation of the chat format)
    from mistral_common.protocol.instruct.messages import AssistantMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    from berds_core.judges.prompts import messages

    chat = [UserMessage(content=m["content"]) if m["role"] == "user" else AssistantMessage(content=m["content"])
            for m in messages(CTX["text"] + " " + CTX["title"], PERSPECTIVE, shot, system=False)]
    ref = MistralTokenizer.v1().encode_chat_completion(ChatCompletionRequest(messages=chat)).tokens
    if not shot:
        assert ours == ref
    else:  # the turns agree; HF's template writes the assistant turn without mistral-common's space
        assert ours[:8] == ref[:8] and ours[-40:] == ref[-40:]


def test_passage_without_title_key_and_with_empty_title(mistral_dir):
    from transformers import AutoTokenizer

    from berds_core.judges import get_judge

    tok = AutoTokenizer.from_pretrained(str(mistral_dir))
    judge = get_judge(f"hf:{mistral_dir}", device="cpu")
    for ctx in ({"text": CTX["text"]}, {"text": CTX["text"], "title": ""}):
        assert our_ids(judge, ctx, PERSPECTIVE) == authors_ids(tok, PAPER_ZERO, ctx, PERSPECTIVE)
    assert our_ids(judge, {"text": "a", "title": ""}, "b") != our_ids(judge, {"text": "a"}, "b")  # trailing space


def test_system_turn_dropped_even_when_a_newer_template_would_merge_it(tmp_path):
    """Newer Mistral templates accept a system turn (merged into the first user turn); the evaluator was
    trained without it, so the berds judge still drops it for Mistral models."""
    from transformers import MistralConfig, MistralForCausalLM

    from berds_core.judges import get_judge
    from tiny_models import CHAT_TEMPLATE

    tok = make_mistral_v1_tokenizer(tmp_path, chat_template=CHAT_TEMPLATE)
    MistralForCausalLM(MistralConfig(vocab_size=32000, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=1, sliding_window=None)
                       ).save_pretrained(str(tmp_path))
    judge = get_judge(f"hf:{tmp_path}", device="cpu")
    ids = our_ids(judge, CTX, PERSPECTIVE)
    strict = make_mistral_v1_tokenizer(tmp_path / "strict", chat_template=MISTRAL_V02_TEMPLATE)
    assert ids == authors_ids(strict, PAPER_ZERO, CTX, PERSPECTIVE)
    kept = get_judge(f"hf:{tmp_path}", device="cpu", system="keep")
    assert "You are a helpful assistant" in tok.decode(our_ids(kept, CTX, PERSPECTIVE))
    assert kept.name != judge.name


def test_strict_template_with_system_keep_is_a_clear_error(mistral_dir):
    from berds_core.judges import JudgeError, get_judge

    judge = get_judge(f"hf:{mistral_dir}", device="cpu", system="keep")
    with pytest.raises(JudgeError, match="system='drop'"):
        judge.predict([("doc", "persp")])


def test_yes_no_token_ids_are_found(mistral_dir):
    from transformers import AutoTokenizer

    from berds_core.generators.hf import answer_token_ids

    tok = AutoTokenizer.from_pretrained(str(mistral_dir))
    yes, no = answer_token_ids(tok, "Yes"), answer_token_ids(tok, "No")
    assert tok.convert_tokens_to_ids("▁Yes") in yes and tok.convert_tokens_to_ids("▁No") in no
    assert set(tok.convert_ids_to_tokens(yes)) <= {"Yes", "▁Yes", "yes", "▁yes"}
    assert set(tok.convert_ids_to_tokens(no)) <= {"No", "▁No", "no", "▁no"}
    assert not set(yes) & set(no)
    # what the evaluator writes after "[/INST]" ("▁Yes" / "▁No") is among them
    after = tok("[INST] x [/INST]Yes", add_special_tokens=False)["input_ids"][-1]
    assert after in yes or tok.convert_ids_to_tokens(after) == "Yes"


# --------------------------------------------------------------------------- the authors' parser


def authors_parse(reply):
    """Spec section 4, written out independently."""
    import ast
    import json as _json

    reply = reply.strip()
    if reply.startswith("{"):  # a JSON-ish object: JSON, or a Python dict literal
        for load in (_json.loads, ast.literal_eval):
            try:
                return str(load(reply)["Answer"]).lower() == "yes"
            except (ValueError, SyntaxError, KeyError):
                continue
        return False
    # what follows the last marker; where two markers start at the same place ("The answer is" and
    # "The answer is:"), the longer one
    found = [(reply.rfind(m), len(m)) for m in ("Answer:", "The answer is", "The answer is:",
                                                "Based on the information provided in the document, the answer is")]
    start, length = max(found)
    cut = reply[start + length:] if start >= 0 else reply
    a = cut.strip().lower()
    return (a.startswith("yes") or a.startswith("(yes") or a in ("y", "ye") or a.endswith("yes")
            or a.endswith("yes.") or a.endswith('yes".') or a.startswith("entail") or a.startswith("true"))


CASES = [
    ('{"Answer": "Yes"}', True), ('{"Answer": "no"}', False), ("{'Answer': 'YES'}", True),
    ("The answer is Yes.", True), ("The answer is: No.", False), ("The answer is: yes", True),
    ("(Yes)", True), ("(No)", False), ("Entailment", True), ("entailed", True), ("Contradiction", False),
    ("No, the document does not support the statement.", False), ("No, ...", False),
    ("Yes", True), (" yes", True), ("No", False), ("y", True), ("ye", True), ("n", False),
    ("True", True), ("False", False), ('I would say "yes".', True), ("It is yes", True),
    ("Answer: No", False), ("Answer: Yes, because", True),
    ("Based on the information provided in the document, the answer is yes.", True),
    ("Based on the information provided in the document, the answer is no.", False),
    ("The answer is No. Answer: Yes", True), ("Answer: Yes. The answer is no", False),
    ("Maybe", False), ("", False), ("Banana", False),
]


@pytest.mark.parametrize("reply,expected", CASES)
def test_parser_gives_the_authors_answer(reply, expected):
    from berds_core.judges.prompts import parse_answer

    assert authors_parse(reply) == expected  # the independent reading of the spec agrees with the table
    assert parse_answer(reply) is expected


def test_parser_reads_the_answer_of_an_object_cut_off_at_16_tokens():
    """Where the authors' reading is undefined (an object cut off by the 16-token limit is not valid
    JSON), the Answer field that was written still decides."""
    from berds_core.judges.prompts import parse_answer

    assert parse_answer('{"Answer": "Yes", "Reason": "the document') is True
    assert parse_answer('{"Answer": "No", "Reason": "the document') is False
    assert parse_answer('{"Reason": "the document says yes') is False
