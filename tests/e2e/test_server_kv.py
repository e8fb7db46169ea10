"""`facet serve`: KV admitted by use and the prefix cache (issue 19).

Oracles: the same requests answered by a server without the prefix cache
(--no-prefix-cache: every prompt prefilled from nothing) and one at a time (greedy
outputs must be identical); token counts from the server's own usage and /metrics.
"""

import concurrent.futures
import json
import random
import shutil
import time

import pytest

from server_harness import Server


@pytest.fixture(scope="module")
def model(repo_root):
    return repo_root / "models" / "stories260k"


@pytest.fixture(scope="module")
def chat_model(repo_root, tmp_path_factory):
    """stories260k with TinyLlama's chat template (Zephyr-style turns)."""
    src = repo_root / "models" / "stories260k"
    dst = tmp_path_factory.mktemp("kv") / "stories-chat"
    dst.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors",
                 "tokenizer.json", "special_tokens_map.json"):
        shutil.copy(src / name, dst / name)
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["chat_template"] = (repo_root / "tests" / "data" / "server" /
                            "tinyllama_chat_template.jinja").read_text()
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg))
    return dst


def chat_body(i):
    # a short chat: the answer ends at its first full stop
    return {"messages": [{"role": "user", "content": "Tell me about cat %d." % (i % 8)}],
            "temperature": 0, "stop": ["."]}


def test_64_short_chats_without_max_tokens_run_at_once(facet_bin, chat_model):
    """64 chats without max_tokens on a budget of 64 x their actual length: each used to
    reserve prompt + the rest of the context (512), so a handful ran and the rest waited;
    admitted by use, none waits and none is preempted, and every answer is the one it
    gets alone."""
    with Server(facet_bin, chat_model, "--threads", "1", "--max-batch", "64",
                "--no-prefix-cache") as s:
        alone = []
        for i in range(8):
            st, r = s.post("/v1/chat/completions", chat_body(i))
            assert st == 200, r
            alone.append(r)
    longest = max(r["usage"]["total_tokens"] for r in alone)
    budget = 64 * longest
    assert budget < 64 * 512 // 4  # far below 64 x the context
    with Server(facet_bin, chat_model, "--threads", "1", "--max-batch", "64",
                "--kv-budget", str(budget)) as s:
        with concurrent.futures.ThreadPoolExecutor(64) as ex:
            res = list(ex.map(lambda i: s.post("/v1/chat/completions", chat_body(i),
                                               timeout=120), range(64)))
        for i, (st, r) in enumerate(res):
            assert st == 200, r
            assert r["choices"][0]["message"] == alone[i % 8]["choices"][0]["message"]
        m = s.metrics()
        assert m["facet_admission_waits_total"] == 0, m
        assert m["facet_preemptions_total"] == 0, m
        assert m["facet_kv_cache_tokens_peak"] <= budget


def test_preempted_requests_finish_unchanged(facet_bin, model):
    """A budget that holds about two of eight growing requests: the newest are preempted
    back to the queue and later prefill their prompt and generated tokens again; every
    output (greedy and seeded sampling) equals the request's answer alone."""
    bodies = [{"prompt": [1, 403 + i], "max_tokens": 60, "logit_bias": {"1": -100, "2": -100},
               "temperature": 0 if i % 2 else 0.8, "seed": i} for i in range(8)]
    with Server(facet_bin, model, "--threads", "1", "--no-prefix-cache") as s:
        alone = [s.post("/v1/completions", b)[1]["choices"][0]["text"] for b in bodies]
    with Server(facet_bin, model, "--threads", "1", "--kv-budget", "130",
                "--no-prefix-cache") as s:
        # on a busy machine the eight requests can arrive spread out enough that none is
        # preempted: the burst is repeated (at most 20 times) until one was, every burst's
        # outputs checked, and the budget's peak over all of them
        for _ in range(20):
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                res = list(ex.map(lambda b: s.post("/v1/completions", b, timeout=120), bodies))
            assert [r["choices"][0]["text"] for _, r in res] == alone
            m = s.metrics()
            if m["facet_preemptions_total"] >= 1:
                break
        assert m["facet_preemptions_total"] >= 1 and m["facet_kv_cache_tokens_peak"] <= 130, m


def mixed_requests(n=200, seed=7):
    """Completions over a few shared prefixes (as a system prompt), different tails,
    lengths and samplings, repeats included."""
    rng = random.Random(seed)
    heads = [[1] + [rng.randrange(259, 512) for _ in range(k)] for k in (30, 60, 90)]
    out = []
    for i in range(n):
        prompt = list(rng.choice(heads))
        prompt += [rng.randrange(259, 512) for _ in range(rng.randrange(0, 20))]
        body = {"prompt": prompt, "max_tokens": rng.randrange(1, 24), "temperature": 0}
        if i % 5 == 0:
            body.update(temperature=0.9, seed=i, top_k=40)
        if i % 7 == 0:
            body["n"] = 2
        out.append(body)
    return out


def run_all(s, bodies, workers=16):
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        res = list(ex.map(lambda b: s.post("/v1/completions", b, timeout=120), bodies))
    assert all(st == 200 for st, _ in res), [r for st, r in res if st != 200][:3]
    return [[c["text"] for c in r["choices"]] for _, r in res]


def test_prefix_cache_never_changes_an_output(facet_bin, model):
    """200 mixed requests (shared prefixes, repeats, n=2, greedy and seeded sampling)
    give the same texts with the prefix cache as without it, and the cache was used:
    from finished sequences and copied from running ones."""
    bodies = mixed_requests()
    with Server(facet_bin, model, "--threads", "1", "--max-batch", "8",
                "--no-prefix-cache") as s:
        want = run_all(s, bodies)
        assert s.metrics()["facet_prefix_cache_hit_tokens_total"] == 0
    # a small budget too, so that cached prefixes are evicted under the load
    with Server(facet_bin, model, "--threads", "1", "--max-batch", "8",
                "--kv-budget", "600") as s:
        got = run_all(s, bodies)
        m = s.metrics()
    assert got == want
    assert m["facet_prefix_cache_hits_total"] > 50, m
    assert m["facet_prefix_cache_evictions_total"] > 0, m
    assert m["facet_prefix_cache_copies_total"] > 0, m
    assert m["facet_kv_cache_tokens_peak"] <= 600, m


def test_second_turn_prefills_only_its_new_tokens(facet_bin, chat_model):
    """Turn 2 of a chat resends turn 1 and its answer: the prefix cache supplies them,
    so the prompt tokens prefilled for turn 2 are its prompt less the cached tokens, and
    the cached ones cover at least turn 1's prompt."""
    msgs = [{"role": "system", "content": "You tell short stories."},
            {"role": "user", "content": "Tell me about a cat."}]
    with Server(facet_bin, chat_model, "--threads", "1") as s:
        st, r1 = s.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 30,
                                                 "temperature": 0})
        assert st == 200, r1
        assert r1["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        before = s.metrics()
        turn2 = msgs + [r1["choices"][0]["message"],
                        {"role": "user", "content": "And then?"}]
        st, r2 = s.post("/v1/chat/completions", {"messages": turn2, "max_tokens": 5,
                                                 "temperature": 0})
        assert st == 200, r2
        after = s.metrics()
    cached = r2["usage"]["prompt_tokens_details"]["cached_tokens"]
    p1, p2 = r1["usage"]["prompt_tokens"], r2["usage"]["prompt_tokens"]
    prefilled = after["facet_prompt_tokens_total"] - before["facet_prompt_tokens_total"]
    assert cached >= p1, (cached, p1)
    assert prefilled == p2 - cached, (prefilled, p2, cached)
    assert after["facet_prefix_cache_hit_tokens_total"] - \
        before["facet_prefix_cache_hit_tokens_total"] == cached


@pytest.fixture(scope="module")
def long_model(repo_root, tmp_path_factory):
    """stories260k with a 4096-token context (room for long generations)."""
    src = repo_root / "models" / "stories260k"
    dst = tmp_path_factory.mktemp("kv") / "stories-long"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("llama2c", "source"))
    config = json.loads((src / "config.json").read_text())
    config["max_position_embeddings"] = 4096
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_deadline_ends_running_and_waiting_requests(facet_bin, long_model):
    """--deadline 0.3: a running request returns what it has (finish_reason length, fewer
    tokens than asked); one waiting behind it (one slot) starts when the first is cut
    and is cut at its own deadline, or, still waiting then, gets 503
    deadline_exceeded. Both are answered within about the deadline."""
    body = {"prompt": [1, 403], "max_tokens": 4000, "logit_bias": {"1": -100, "2": -100},
            "temperature": 1, "seed": 1, "logprobs": 5, "n": 1}
    with Server(facet_bin, long_model, "--threads", "1", "--max-batch", "1",
                "--deadline", "0.3") as s:
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            first = ex.submit(s.post, "/v1/completions", body)
            time.sleep(0.05)
            second = ex.submit(s.post, "/v1/completions", dict(body, seed=2))
            st1, r1 = first.result(60)
            st2, r2 = second.result(60)
        assert time.time() - t0 < 3
        assert st1 == 200 and r1["choices"][0]["finish_reason"] == "length"
        assert r1["usage"]["completion_tokens"] < 4000, r1["usage"]
        if st2 == 503:
            assert r2["error"]["code"] == "deadline_exceeded", r2
        else:
            assert st2 == 200 and r2["choices"][0]["finish_reason"] == "length"
            assert r2["usage"]["completion_tokens"] < 4000, r2["usage"]
        assert s.metrics()["facet_requests_deadline_total"] == 2
