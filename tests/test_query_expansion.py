"""Query expansion: round-robin merge, perspective sources, LLM parsing and backends."""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from berds_core.diversify import QE_SOURCES, Using, diversify, expansion_queries, perspectives_for, round_robin_merge
from berds_core.datasets.sides import yes_no_sides
from berds_core.diversify.facets import feedback_facets, offline_perspectives
from berds_core.diversify.llm_perspectives import build_prompt, generate_perspectives, parse_perspectives
from berds_core.records import Question

from test_mmr import FakeCorpus, FakeRetriever


# --- round-robin merge ---------------------------------------------------

def test_round_robin_interleaves_in_perspective_order():
    assert round_robin_merge([[1, 2, 3], [4, 5, 6]], 4) == [1, 4, 2, 5]
    assert round_robin_merge([[4, 5, 6], [1, 2, 3]], 4) == [4, 1, 5, 2]


def test_round_robin_skips_duplicates_across_lists():
    # list 2's top (1) is taken already: its top *unseen* passage (7) is taken instead
    assert round_robin_merge([[1, 2, 3], [1, 7, 8], [2, 9]], 6) == [1, 7, 2, 3, 8, 9]
    # a duplicate inside one list is taken once
    assert round_robin_merge([[1, 1, 2], [2, 3]], 3) == [1, 2, 3]


def test_round_robin_k_larger_than_union_and_exhausted_lists():
    assert round_robin_merge([[1, 2], [2, 1], [1]], 10) == [1, 2]
    assert round_robin_merge([[1], [], [5, 6, 7]], 10) == [1, 5, 6, 7]
    assert round_robin_merge([], 3) == []
    assert round_robin_merge([[1, 2]], 0) == []


def test_round_robin_keeps_first_score_of_pairs():
    lists = [[(1, 0.9), (2, 0.8)], [(2, 0.7), (3, 0.6)]]
    assert round_robin_merge(lists, 3) == [(1, 0.9), (2, 0.7), (3, 0.6)]
    # ties and duplicates: 2 appears in both lists, the first list's occurrence wins when reached first
    assert round_robin_merge([[(2, 0.5), (1, 0.5)], [(2, 0.9), (1, 0.9)]], 5) == [(2, 0.5), (1, 0.9)]


def test_expansion_queries_are_question_plus_perspective():
    assert expansion_queries("Is X good? ", ["Yes it is.", "  ", "No."]) == ["Is X good? Yes it is.", "Is X good? No."]


# --- sources -------------------------------------------------------------

QUESTION = Question("q1", "Are cats great pets?", ["Cats are great pets.", "Cats cause allergies."],
                    generated_perspectives=["friends loyal", "allergies shed fur sneeze cause"])
TEXTS = ["cats are great pets and great friends", "cats are great pets and loyal friends",
         "cats cause allergies and shed fur", "dogs bark", "fish swim", "cats allergies fur sneeze"]


def test_perspective_sources():
    assert perspectives_for(QUESTION, "dataset") == ["friends loyal", "allergies shed fur sneeze cause"]
    assert perspectives_for(QUESTION, "oracle") == QUESTION.perspectives
    assert "oracle" in QE_SOURCES["oracle"] and "upper bound" in QE_SOURCES["oracle"]
    with pytest.raises(ValueError):
        perspectives_for(QUESTION, "nope")
    with pytest.raises(ValueError):
        perspectives_for(QUESTION, "llm")  # needs an LLM spec


def test_diversify_qe_round_robin_through_retriever():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    got = [r for r, _ in diversify(QUESTION, corpus, ret, "qe(source=dataset)", 3)]
    # list 1 (+ "friends loyal"): 1 (6 words), 0 (5); list 2 (+ "allergies ..."): 2 (5), 0 (4), 5 (4)
    assert got == [1, 2, 0]
    # the 4th: list 2's top unseen is 5 (0 is a duplicate across the expanded queries)
    assert [r for r, _ in diversify(QUESTION, corpus, ret, "qe(source=dataset)", 4)] == [1, 2, 0, 5]
    # explicit perspectives override the source; none at all -> plain retrieval
    assert [r for r, _ in diversify(QUESTION, corpus, ret, "qe", 2, using=Using(perspectives=[]))] == [0, 1]
    no_gen = Question("q2", QUESTION.question, QUESTION.perspectives)
    assert [r for r, _ in diversify(no_gen, corpus, ret, "qe(source=dataset)", 2)] == [0, 1]


def test_yes_no_sides_rules():
    assert yes_no_sides("Should the US ban guns?") == ("The US should ban guns", "The US should not ban guns")
    assert yes_no_sides("Is golf a sport?") == ("Golf is a sport", "Golf is not a sport")
    assert yes_no_sides("Are video games art?") == ("Video games are art", "Video games are not art")
    assert yes_no_sides("Is social media good for society?")[0] == "Social media is good for society"
    assert yes_no_sides("Can money buy happiness?") == ("Money can buy happiness", "Money cannot buy happiness")
    assert yes_no_sides("Is the death penalty justified?")[1] == "The death penalty is not justified"
    assert yes_no_sides("Abortion should be legal") == ("Abortion should be legal", "Abortion should not be legal")
    yes, no = yes_no_sides("Why do people like jazz?")
    assert yes.startswith("Yes") and no.startswith("No")
    assert yes_no_sides("  ") == ("", "")


def test_feedback_facets_deterministic_and_skip_question_words():
    texts = ["taxes on sugar raise revenue for health programs", "sugar taxes fund health clinics revenue",
             "sugar taxes hurt poor families budgets", "poor families pay more under sugar taxes",
             "industry jobs lost because sugar taxes", "sugar taxes cost industry jobs"]
    a = feedback_facets("Should sugar be taxed?", texts, n_facets=3, n_terms=3)
    assert a == feedback_facets("Should sugar be taxed?", texts, n_facets=3, n_terms=3)
    assert 1 <= len(a) <= 3
    assert all("sugar" not in f.split() for f in a)
    assert feedback_facets("q", ["only one"], n_facets=2) == []


def test_offline_perspectives_sides_then_facets():
    corpus = FakeCorpus(TEXTS)
    ret = FakeRetriever(corpus)
    p = offline_perspectives(QUESTION.question, corpus=corpus, retriever=ret, feedback=6, n_facets=2)
    assert p[:2] == ["Cats are great pets", "Cats are not great pets"]
    assert 3 <= len(p) <= 4
    assert offline_perspectives(QUESTION.question) == p[:2]  # no corpus: sides only
    got = diversify(QUESTION, corpus, ret, "qe(source=offline)", 4)
    assert len({r for r, _ in got}) == 4


# --- LLM perspectives ----------------------------------------------------

def test_prompt_has_no_gold():
    prompt = build_prompt(QUESTION.question, 3)
    assert QUESTION.question in prompt and "JSON" in prompt
    assert all(p not in prompt for p in QUESTION.perspectives)


@pytest.mark.parametrize("raw, want", [
    ('{"Pro": "Cats are loving.", "Con": "Cats cause allergies."}', ["Cats are loving.", "Cats cause allergies."]),
    ('Sure! Here it is:\n```json\n{"A": "one", "B": "two"}\n```\nHope it helps', ["one", "two"]),
    ('Answer: {"perspectives": ["one", "two", "one"]} trailing', ["one", "two"]),
    ('[{"name": "A", "text": "first"}, {"name": "B", "text": "second"}]', ["first", "second"]),
    ('{"A": "broken", "B": "unterminated\n1. First view\n2) Second view', ["First view", "Second view"]),
    ('- **Health**: sugar harms health\n- **Economy**: taxes hurt', ["sugar harms health", "taxes hurt"]),
    ("no structure at all", []),
    ("", []),
])
def test_parse_perspectives(raw, want):
    assert parse_perspectives(raw) == want


class _Handler(BaseHTTPRequestHandler):
    requests = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.requests.append((self.path, body))
        content = 'Here you go: {"Pro": "Cats are affectionate companions.", "Con": "Cats trigger allergies."}'
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def openai_server():
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}/v1"
    srv.shutdown()


def test_openai_backend_and_cache(openai_server):
    _Handler.requests.clear()
    spec = f"openai:test-model@{openai_server}"
    got = generate_perspectives("Are cats good pets?", spec)
    assert got == ["Cats are affectionate companions.", "Cats trigger allergies."]
    path, body = _Handler.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "test-model" and body["temperature"] == 0
    assert "Are cats good pets?" in body["messages"][0]["content"]
    assert generate_perspectives("Are cats good pets?", spec) == got
    assert len(_Handler.requests) == 1  # second call served from the cache
    corpus = FakeCorpus(TEXTS)
    hits = diversify(QUESTION, corpus, FakeRetriever(corpus), "qe(source=llm)", 3, using=Using(llm=spec))
    assert len(hits) == 3


def test_hf_backend_with_tiny_local_model(tmp_path):
    """A tiny random GPT-2 built here: the hf path loads, prompts, generates and parses without error."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([build_prompt("Are cats good pets?"), '{ } " : , . Pro Con'],
                            trainers.WordLevelTrainer(special_tokens=["[UNK]", "[EOS]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    fast.save_pretrained(tmp_path)
    cfg = GPT2Config(vocab_size=fast.vocab_size, n_positions=256, n_embd=16, n_layer=1, n_head=2,
                     eos_token_id=fast.eos_token_id, bos_token_id=fast.eos_token_id)
    GPT2LMHeadModel(cfg).save_pretrained(tmp_path)
    out = generate_perspectives("Are cats good pets?", f"hf:{tmp_path}", max_new_tokens=8)
    assert isinstance(out, list) and all(isinstance(s, str) and s for s in out)
    with pytest.raises(ValueError):
        generate_perspectives("Are cats good pets?", "gpt:whatever")


# --- the paper's perspective-generation prompt ---------------------------------

PAPER_QE = """Generate diverse perspectives that answer the given question. Please answer with a JSON object, where each field is a perspective. Do not generate similar perspectives; they should be distinct. The keys in the JSON object should be meaningful, and each word in the keys should be separated by whitespace.␠

Question: [Question]""".replace("␠", " ")


def test_default_prompt_is_the_papers_byte_for_byte(openai_server):
    from berds_core.diversify.query_expansion import expansion_queries

    q = "Should zoos exist?"
    assert build_prompt(q) == PAPER_QE.replace("[Question]", q)
    assert build_prompt(q, prompt="studio") != build_prompt(q) and "3 distinct" in build_prompt(q, prompt="studio")
    with pytest.raises(ValueError, match="berds, studio"):
        build_prompt(q, prompt="other")
    _Handler.requests.clear()
    got = generate_perspectives(q, f"openai:test-model@{openai_server}")
    body = _Handler.requests[0][1]
    assert body["messages"] == [{"role": "user", "content": PAPER_QE.replace("[Question]", q)}]
    # each generated perspective (a field's value) becomes "question + ' ' + text", in generation order
    assert expansion_queries(q, got) == [q + " Cats are affectionate companions.", q + " Cats trigger allergies."]
    generate_perspectives(q, f"openai:test-model@{openai_server}", prompt_name="studio")
    assert len(_Handler.requests) == 2  # another prompt, another cache entry


def test_parse_the_papers_json_answer_shape():
    raw = ('{\n  "Animal Welfare Concerns": "Zoos confine animals in small spaces.",\n'
           '  "Conservation Benefits": "Zoos breed endangered species.",\n'
           '  "Education": "Zoos teach children about wildlife."\n}')
    assert parse_perspectives(raw) == ["Zoos confine animals in small spaces.", "Zoos breed endangered species.",
                                       "Zoos teach children about wildlife."]
