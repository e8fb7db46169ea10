"""Scoring through `facet serve`: /v1/completions with echo and logprobs (the requests of
lm-evaluation-harness's loglikelihood: echo, logprobs, max_tokens 0 or 1) returns the
prompt's token log-probabilities, equal (1e-4) to log_softmax of `facet run
--dump-logits` rows for the same tokens (numpy, float64), on the bundled model."""

import json

import numpy as np
import pytest

from server_harness import Server

N_VOCAB = 512


@pytest.fixture(scope="module")
def model(repo_root):
    return repo_root / "models" / "stories260k"


@pytest.fixture(scope="module")
def server(facet_bin, model):
    # a small chunk: a long prompt's log-probs come over several steps
    s = Server(facet_bin, model, "--threads", "1", "--chunk", "24")
    try:
        yield s
        s.assert_clean_exit()
    finally:
        s.stop()


def run_logprobs(run_facet, model, ids, tmp_path):
    """log p(ids[t] | ids[<t]) for t >= 1 and the argmax of each row, from the dumped
    logits of `facet run` (row t-1 predicts token t)."""
    dump = tmp_path / "logits.f32"
    p = run_facet(["run", str(model), "--prompt-ids", ",".join(map(str, ids)), "-n", "1",
                   "--json", "--dump-logits", str(dump)], timeout=60)
    assert p.returncode == 0, p.stderr
    rows = np.fromfile(dump, dtype="<f4").reshape(-1, N_VOCAB).astype(np.float64)
    assert rows.shape[0] == len(ids)
    m = rows.max(axis=1, keepdims=True)
    lsm = rows - m - np.log(np.exp(rows - m).sum(axis=1, keepdims=True))
    lp = [lsm[t - 1, ids[t]] for t in range(1, len(ids))]
    return lp, [int(np.argmax(lsm[t - 1])) for t in range(1, len(ids))], lsm


def tokenize(run_facet, model, text):
    p = run_facet(["tokenize", str(model), text], timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("max_tokens", [0, 1])
def test_echo_logprobs_equal_dumped_logits(server, run_facet, model, tmp_path, max_tokens):
    ids = [1] + [(37 * k + 11) % 500 + 3 for k in range(70)]  # > SRV_PLP_ROWS positions
    want, argmax, lsm = run_logprobs(run_facet, model, ids, tmp_path)
    st, r = server.post("/v1/completions", {"prompt": ids, "echo": True, "logprobs": 1,
                                            "max_tokens": max_tokens, "temperature": 0})
    assert st == 200, r
    ch = r["choices"][0]
    lp = ch["logprobs"]
    n_gen = max_tokens
    assert len(lp["tokens"]) == len(ids) + n_gen
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    got = lp["token_logprobs"][1:len(ids)]
    assert np.max(np.abs(np.array(got) - np.array(want))) < 1e-4
    # the top-1 alternative of each prompt position is the row's argmax, with its logprob
    for t in range(1, len(ids)):
        (tok, v), = lp["top_logprobs"][t].items()
        assert abs(v - lsm[t - 1, argmax[t - 1]]) < 1e-4
    assert r["usage"]["prompt_tokens"] == len(ids)
    assert r["usage"]["completion_tokens"] == n_gen
    if max_tokens == 1:
        # the generated token's log-prob comes from the last prompt row, as without echo
        st, plain = server.post("/v1/completions", {"prompt": ids, "logprobs": 1,
                                                    "max_tokens": 1, "temperature": 0})
        assert st == 200
        assert lp["token_logprobs"][-1] == plain["choices"][0]["logprobs"]["token_logprobs"][0]
        assert ch["text"].endswith(plain["choices"][0]["text"])
    else:
        assert ch["finish_reason"] == "length"
    # offsets count through the token strings (in bytes, as without echo)
    offs = lp["text_offset"]
    assert offs[0] == 0 and all(offs[i + 1] == offs[i] + len(lp["tokens"][i].encode())
                                for i in range(len(ids) - 1))


def test_echo_text_prompt(server, run_facet, model, tmp_path):
    """lm-eval sends context + continuation as text: the echoed text is the prompt, the
    log-probs those of its tokens (BOS added as for any text prompt)."""
    prompt = "Once upon a time there was a little dog"
    ids = tokenize(run_facet, model, prompt)
    want, _, _ = run_logprobs(run_facet, model, ids, tmp_path)
    st, r = server.post("/v1/completions", {"prompt": prompt, "echo": True, "logprobs": 0,
                                            "max_tokens": 0})
    assert st == 200, r
    ch = r["choices"][0]
    assert ch["text"] == prompt
    got = ch["logprobs"]["token_logprobs"]
    assert len(got) == len(ids) and got[0] is None
    assert np.max(np.abs(np.array(got[1:]) - np.array(want))) < 1e-4
    # a continuation's log-likelihood is the sum over its tokens
    ctx = tokenize(run_facet, model, "Once upon a time")
    assert ids[:len(ctx)] == ctx
    assert abs(sum(got[len(ctx):]) - sum(want[len(ctx) - 1:])) < 1e-3
    # text_offset indexes the echoed text: the BOS added to the text prompt takes no
    # room (its "<s>" is not in the text), nor the dummy-prefix space of " Once"; every
    # other token's text starts at its offset
    toks, offs = ch["logprobs"]["tokens"], ch["logprobs"]["text_offset"]
    body = ch["text"].encode()
    assert toks[:2] == ["<s>", " Once"] and offs[:3] == [0, 0, 4]
    for t, o in zip(toks[2:], offs[2:]):
        assert body[o:].startswith(t.encode()), (t, o)
    assert offs[-1] + len(toks[-1].encode()) == len(body)


def test_echo_without_logprobs_and_errors(server):
    st, r = server.post("/v1/completions", {"prompt": "Once upon", "echo": True,
                                            "max_tokens": 2, "temperature": 0})
    assert st == 200 and r["choices"][0]["text"].startswith("Once upon")
    assert r["choices"][0]["logprobs"] is None
    st, r = server.post("/v1/completions", {"prompt": "Once", "max_tokens": 0})
    assert st == 400 and r["error"]["param"] == "max_tokens"
    st, r = server.post("/v1/completions", {"prompt": "Once", "echo": True, "stream": True})
    assert st == 400 and r["error"]["param"] == "echo"


def test_echo_prompt_cached_or_not_is_the_same(server):
    """The prefix cache must not skip the positions whose log-probs are asked: the same
    request twice (the second finds the prompt cached) gives the same numbers."""
    ids = [1, 45, 67, 89, 120, 200, 17, 300, 44]
    body = {"prompt": ids, "echo": True, "logprobs": 2, "max_tokens": 1, "temperature": 0}
    a = server.post("/v1/completions", body)[1]["choices"][0]["logprobs"]
    b = server.post("/v1/completions", body)[1]["choices"][0]["logprobs"]
    assert a == b and None not in a["token_logprobs"][1:]


def test_score_candidates_equal_dumped_logits(server, run_facet, model, tmp_path):
    """/v1/score: each candidate's logprob is the sum of log p over its tokens given the
    prompt, equal (1e-4) to the dumped logits of prompt + candidate."""
    prompt = [1, 403, 259, 300, 17, 88]
    cands = [[45, 67], [300], [12, 99, 140, 7]]
    st, r = server.post("/v1/score", {"prompt": prompt, "candidates": cands})
    assert st == 200, r
    assert r["object"] == "score" and len(r["data"]) == 3
    for i, c in enumerate(cands):
        d = r["data"][i]
        assert d["index"] == i and d["candidate"] == c and d["tokens"] == len(c)
        want, _, _ = run_logprobs(run_facet, model, prompt + c, tmp_path)
        want = want[len(prompt) - 1:]
        assert np.max(np.abs(np.array(d["token_logprobs"]) - np.array(want))) < 1e-4
        assert abs(d["logprob"] - sum(want)) < 1e-4
    assert r["usage"]["prompt_tokens"] == sum(len(prompt) + len(c) for c in cands)
    # the same as echo gives for the whole text
    st, e = server.post("/v1/completions", {"prompt": prompt + cands[2], "echo": True,
                                            "logprobs": 0, "max_tokens": 0})
    assert abs(sum(e["choices"][0]["logprobs"]["token_logprobs"][len(prompt):]) -
               r["data"][2]["logprob"]) < 1e-9


def test_score_text_candidates(server, run_facet, model, tmp_path):
    """Text: the prompt tokenized with BOS, each candidate on its own without."""
    st, r = server.post("/v1/score", {"prompt": "Once upon a time",
                                      "candidates": [" there was a cat", " the end"]})
    assert st == 200, r
    ctx = tokenize(run_facet, model, "Once upon a time")
    for i, text in enumerate([" there was a cat", " the end"]):
        p = run_facet(["tokenize", str(model), "--no-special", text], timeout=30)
        cand = json.loads(p.stdout)
        want, _, _ = run_logprobs(run_facet, model, ctx + cand, tmp_path)
        assert r["data"][i]["tokens"] == len(cand)
        assert abs(r["data"][i]["logprob"] - sum(want[len(ctx) - 1:])) < 1e-4
    # a likelier continuation scores higher than a garbled one
    st, r = server.post("/v1/score", {"prompt": "Once upon a", "candidates": [" time", " zqx"]})
    assert st == 200 and r["data"][0]["logprob"] > r["data"][1]["logprob"]


@pytest.mark.parametrize("body,param", [
    ({"candidates": ["a"]}, "prompt"),
    ({"prompt": "a"}, "candidates"),
    ({"prompt": "a", "candidates": []}, "candidates"),
    ({"prompt": "a", "candidates": [[1, 99999]]}, "candidates[0]"),
    ({"prompt": "a", "candidates": ["x"], "n": 2}, "n"),
    ({"prompt": [], "candidates": ["x"]}, "prompt"),
])
def test_score_errors(server, body, param):
    st, r = server.post("/v1/score", body)
    assert st == 400 and r["error"]["param"] == param, r
