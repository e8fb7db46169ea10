"""Structured outputs by constrained decoding (facet_grammar.h) through `facet serve`:
one-layer random-weight checkpoints with the real Qwen3, Llama 3 and Mistral vocabularies
(tests/ref/gen_checkpoint.py, tokenizers from ../shared/corpus), sampled at
temperature 1 so the tokens come from all over the vocabulary (byte-level pieces that
split UTF-8 characters, tokens spanning several grammar symbols).

Oracles: Python's json parser and the jsonschema package (Debian's
python3-jsonschema, an independent validator) for every output of 50 generated
schemas, from flat to nested with $defs, enums and anyOf; a GBNF `grammar` whose
language is listed by hand; the 400 of a refused keyword. The generation must end by
itself (finish_reason "stop"): the grammar finishes the document, so a completed
answer never runs into max_tokens.
"""

import json
import random
import shutil

import jsonschema
import pytest

from server_harness import Server

MODELS = {
    "qwen3": ("configs/Qwen__Qwen3-0.6B__dims", "tokenizers/qwen3", 151936),
    "llama3": ("configs/meta-llama__Llama-3.2-1B-Instruct__resaved", "tokenizers/llama3.1", 128256),
    # Gemma 3: a 262k SentencePiece-style BPE vocabulary (the largest of the corpus)
    "gemma3": ("configs/google__medgemma-27b-it", "tokenizers/gemma3", 262208),
    # SentencePiece with <0xHH> byte tokens and "▁" spaces (the trie's other decoding path)
    "mistral": ("configs/mistralai__Mistral-7B-Instruct-v0.3", "tokenizers/mistral-v0.1", 32000),
}


def leaf(rng):
    return rng.choice([
        {"type": "string", "maxLength": rng.randint(0, 6)},
        {"type": "string", "minLength": 1, "maxLength": 4},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"enum": ["red", "green", "blue"]},
        {"enum": [1, "two", None, True]},
        {"const": "fixed"},
        {"type": ["integer", "null"]},
        {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
    ])


def obj(rng, depth):
    n = rng.randint(1, 4)
    props = {}
    for i in range(n):
        if depth > 0 and rng.random() < 0.35:
            props["k%d" % i] = obj(rng, depth - 1)
        else:
            props["k%d" % i] = leaf(rng)
    req = [k for k in props if rng.random() < 0.6]
    return {"type": "object", "properties": props, "required": req,
            "additionalProperties": False}


def schemas():
    rng = random.Random(20)
    out = [leaf(random.Random(i)) for i in range(8)]
    out += [obj(rng, 0) for _ in range(14)]
    out += [obj(rng, 2) for _ in range(14)]
    for i in range(7):  # $defs, $ref, recursion bounded by an optional field, anyOf
        out.append({
            "$defs": {"point": {"type": "object", "properties": {
                "x": {"type": "integer"}, "y": {"type": "number"}}, "required": ["x", "y"],
                "additionalProperties": False},
                "shape": {"anyOf": [{"$ref": "#/$defs/point"},
                                    {"type": "string", "maxLength": 5}]}},
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 4},
                           "at": {"$ref": "#/$defs/point"},
                           "shapes": {"type": "array", "items": {"$ref": "#/$defs/shape"},
                                      "maxItems": 2}},
            "required": ["name", "at"] if i % 2 else ["at"],
            "additionalProperties": False})
    for i in range(7):
        out.append({"type": "array", "items": obj(rng, 1), "minItems": 1, "maxItems": 2})
    return out


SCHEMAS = schemas()


@pytest.fixture(scope="module", params=sorted(MODELS))
def server(request, facet_bin, facet_shared, make_checkpoint, tmp_path_factory):
    config, tokenizer, vocab = MODELS[request.param]
    src = make_checkpoint(facet_shared / "corpus" / config,
                          shrink={"vocab_size": vocab, "num_hidden_layers": 1, "head_dim": 16,
                                  "max_heads": 2})
    dst = tmp_path_factory.mktemp("structured") / request.param
    shutil.copytree(src, dst)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(facet_shared / "corpus" / tokenizer / name, dst / name)
    s = Server(facet_bin, dst, "--ctx", "1024", "--threads", "1", timeout=120)
    s.model_name = dst.name
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


NO_TEMPLATE = {"mistral"}  # the corpus's mistral-v0.1 tokenizer has no chat template


def chat(server, seed, **kw):
    """A chat completion's choice; /v1/completions (its text as the message) for a
    model without a chat template."""
    body = {"model": server.model_name, "max_tokens": 400, "temperature": 1.0, "seed": seed}
    body.update(kw)
    if server.model_name in NO_TEMPLATE:
        body["prompt"] = "JSON please:"
        status, r = server.post("/v1/completions", body, timeout=600)
        assert status == 200, r
        c = r["choices"][0]
        c["message"] = {"content": c["text"]}
        return c
    body["messages"] = [{"role": "user", "content": "JSON please"}]
    status, r = server.post("/v1/chat/completions", body, timeout=600)
    assert status == 200, r
    return r["choices"][0]


def test_fifty_schemas_validate(server):
    assert len(SCHEMAS) >= 50
    for i, schema in enumerate(SCHEMAS):
        c = chat(server, i, response_format={"type": "json_schema", "json_schema": {
            "name": "s%d" % i, "schema": schema, "strict": True}})
        text = c["message"]["content"]
        assert c["finish_reason"] == "stop", (i, schema, text)
        doc = json.loads(text)
        jsonschema.validate(doc, schema)


def test_json_object(server):
    for seed in range(2):
        c = chat(server, 100 + seed, response_format={"type": "json_object"}, max_tokens=24)
        if c["finish_reason"] == "stop":  # an unbounded object may run out of tokens
            assert isinstance(json.loads(c["message"]["content"]), dict)
        else:  # then it is a prefix of one: every prefix the grammar allowed
            assert c["message"]["content"].lstrip().startswith("{")


def test_gbnf_grammar(server):
    seen = set()
    for seed in range(6):
        c = chat(server, seed, grammar='root ::= ("yes" | "no") ("!" | "") [0-9]{2}',
                 max_tokens=16)
        t = c["message"]["content"]
        assert c["finish_reason"] == "stop"
        assert t[:-2] in ("yes", "no", "yes!", "no!") and t[-2:].isdigit(), t
        seen.add(t)
    assert len(seen) > 1  # sampled, not a fixed string


def test_refusals(server):
    if server.model_name in NO_TEMPLATE:
        pytest.skip("no chat template: the refusals are checked on the chat route")
    body = {"model": server.model_name, "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
                "type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}}}}
    status, r = server.post("/v1/chat/completions", body)
    assert status == 400 and r["error"]["param"] == "response_format"
    assert "keyword 'pattern' at /properties/a" in r["error"]["message"]
    body = {"model": server.model_name, "messages": [{"role": "user", "content": "x"}],
            "grammar": 'root ::= "a" b'}
    status, r = server.post("/v1/chat/completions", body)
    assert status == 400 and "rule 'b' is used but not defined" in r["error"]["message"]


TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 6},
                                         "unit": {"enum": ["c", "f"]}},
        "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "add", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": False}}},
]


def check_call(c, names):
    assert c["finish_reason"] == "tool_calls", c
    calls = c["message"]["tool_calls"]
    assert len(calls) == 1, calls
    fn = calls[0]["function"]
    assert fn["name"] in names
    schema = next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == fn["name"])
    jsonschema.validate(json.loads(fn["arguments"]), schema)
    return fn["name"]


def test_tool_choice_required_and_named(server):
    """Today's failure mode (a required call returned as plain text, finish_reason
    "length") cannot happen: the call is the grammar's only sentence."""
    if server.model_name != "qwen3":
        pytest.skip("the corpus's %s chat template shows no tool-call syntax" % server.model_name)
    names = set()
    for seed in range(6):
        c = chat(server, seed, tools=TOOLS, tool_choice="required", max_tokens=120)
        names.add(check_call(c, {"get_weather", "add"}))
    assert names <= {"get_weather", "add"}
    for seed in range(2):
        c = chat(server, 50 + seed, tools=TOOLS, max_tokens=120,
                 tool_choice={"type": "function", "function": {"name": "add"}})
        check_call(c, {"add"})
