"""`facet serve` /v1/embeddings on a Qwen3-Embedding-shaped random checkpoint (the
Qwen3 config of tests/data/ref shrunk, seeded random weights, the bundled stories260k
tokenizer for text inputs, sentence-transformers' 1_Pooling/config.json): each vector
equals the float64 reference's (tests/ref/reference.py Reference.hidden) pooled and
L2-normalised final hidden states to 1e-4, for last-token and mean pooling, single and
batched inputs (more than one forward pass's worth), token ids and text."""

import base64
import json
import shutil
import struct

import numpy as np
import pytest

from server_harness import Server

CONFIG = "tests/data/ref/configs/Qwen__Qwen3-0.6B__dims"
INPUTS = [[1, 45, 67, 89, 120], [1, 300], [1, 17, 17, 17, 200, 201, 202, 203, 9],
          [5], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], [1, 400, 401], [1, 250, 260],
          [1, 99, 98, 97], [1, 33], [1, 44, 55, 66, 77]]


def embedding_model(repo_root, ckpt, dst, mode):
    shutil.copytree(ckpt, dst)
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", dst / "tokenizer.json")
    (dst / "1_Pooling").mkdir()
    cfg = {"word_embedding_dimension": json.loads((dst / "config.json").read_text())
           ["hidden_size"], "pooling_mode_cls_token": False,
           "pooling_mode_mean_tokens": mode == "mean", "pooling_mode_max_tokens": False,
           "pooling_mode_lasttoken": mode == "last", "include_prompt": True}
    (dst / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    return dst


@pytest.fixture(scope="module")
def models(repo_root, make_checkpoint, tmp_path_factory):
    ckpt = make_checkpoint(repo_root / CONFIG, dtype="f32", shrink={})
    base = tmp_path_factory.mktemp("embed")
    return {mode: embedding_model(repo_root, ckpt, base / mode, mode)
            for mode in ("last", "mean")}


@pytest.fixture(scope="module")
def servers(facet_bin, models):
    out = {}
    try:
        for mode, path in models.items():
            out[mode] = Server(facet_bin, path, "--threads", "1", "--ctx", "1200")
        yield out
        for s in out.values():
            s.assert_clean_exit()
    finally:
        for s in out.values():
            s.stop()


def expected(reference_for, model, ids, mode):
    h = reference_for(model).hidden(ids)
    v = h[-1] if mode == "last" else h.mean(axis=0)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("mode", ["last", "mean"])
def test_embeddings_equal_reference(servers, models, reference_for, mode):
    s = servers[mode]
    st, r = s.post("/v1/embeddings", {"input": INPUTS})
    assert st == 200, r
    assert r["object"] == "list" and len(r["data"]) == len(INPUTS)
    assert r["usage"]["prompt_tokens"] == sum(map(len, INPUTS))
    for i, ids in enumerate(INPUTS):
        d = r["data"][i]
        assert d["object"] == "embedding" and d["index"] == i
        got = np.array(d["embedding"])
        want = expected(reference_for, models[mode], ids, mode)
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) < 1e-4, (i, np.max(np.abs(got - want)))
    # an input longer than one forward call's tokens (SRV_EMBED_TOKENS = 1024), beside
    # a short one: fed over several calls, pooled over all of them
    long_ids = [1] + [(7 * k) % 500 + 3 for k in range(1099)]
    st, lr = s.post("/v1/embeddings", {"input": [INPUTS[0], long_ids]})
    assert st == 200, lr
    for d, ids in zip(lr["data"], [INPUTS[0], long_ids]):
        want = expected(reference_for, models[mode], ids, mode)
        assert np.max(np.abs(np.array(d["embedding"]) - want)) < 1e-4
    # one input alone gives the vector it gets in a batch (bits: the same forward pass
    # over one sequence's rows)
    st, one = s.post("/v1/embeddings", {"input": INPUTS[2]})
    assert st == 200 and len(one["data"]) == 1
    assert np.max(np.abs(np.array(one["data"][0]["embedding"]) -
                         np.array(r["data"][2]["embedding"]))) < 1e-6


def test_text_base64_dimensions(servers, run_facet, models):
    s = servers["last"]
    p = run_facet(["tokenize", str(models["last"]), "Once upon a time"], timeout=30)
    ids = json.loads(p.stdout)
    st, t = s.post("/v1/embeddings", {"input": ["Once upon a time"]})
    st2, i = s.post("/v1/embeddings", {"input": [ids]})
    assert st == st2 == 200
    assert t["data"][0]["embedding"] == i["data"][0]["embedding"]
    assert t["usage"]["prompt_tokens"] == len(ids)
    st, b = s.post("/v1/embeddings", {"input": "Once upon a time", "encoding_format": "base64"})
    assert st == 200
    raw = base64.b64decode(b["data"][0]["embedding"])
    floats = struct.unpack("<%df" % (len(raw) // 4), raw)
    assert np.max(np.abs(np.array(floats) - np.array(t["data"][0]["embedding"]))) < 1e-7
    st, d = s.post("/v1/embeddings", {"input": "Once upon a time", "dimensions": 16})
    assert st == 200
    v = np.array(t["data"][0]["embedding"][:16])
    assert np.max(np.abs(np.array(d["data"][0]["embedding"]) - v / np.linalg.norm(v))) < 1e-6
    st, m = s.get("/v1/models")[0], json.loads(s.get("/v1/models")[2])
    assert m["data"][0]["capabilities"]["embeddings"] is True


@pytest.mark.parametrize("body,param", [
    ({}, "input"),
    ({"input": []}, "input"),
    ({"input": [[1, 99999]]}, "input"),
    ({"input": "a", "encoding_format": "hex"}, "encoding_format"),
    ({"input": "a", "dimensions": 0}, "dimensions"),
    ({"input": "a", "pooling": "max"}, "pooling"),
    ({"input": [[1] * 1201]}, "input"),
])
def test_embedding_errors(servers, body, param):
    st, r = servers["last"].post("/v1/embeddings", body)
    assert st == 400 and r["error"]["param"] == param, r
