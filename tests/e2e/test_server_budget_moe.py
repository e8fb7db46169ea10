"""`facet serve`'s KV budget on a mixture-of-experts checkpoint (issue 27): the server
sizes its budget from the same weight bytes `facet plan` reports, and those count every
expert (tests/unit/test_engine_moe.c checks them against what the engine allocates). On a
fixed machine size (FACET_MEM_AVAILABLE) that leaves room for about 100 tokens after the
experts, the budget is the documented rule's: (memory - 10% - weights) / KV bytes per
token. Had the plan counted a dense FFN instead of the experts, the budget would be
thousands of tokens larger.
"""

import json
import os
import shutil

import pytest

from server_harness import Server
from test_reference_moe import QWEN15_MOE_A27B
from test_server_budget import budget_line


@pytest.fixture(scope="module")
def moe_model(make_checkpoint, repo_root, tmp_path_factory):
    src = make_checkpoint(QWEN15_MOE_A27B, dtype="bf16",
                          shrink={"num_hidden_layers": 3, "mlp_only_layers": [1]})
    dst = tmp_path_factory.mktemp("kvbudget-moe") / "qwen2-moe"
    shutil.copytree(src, dst)
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", dst / "tokenizer.json")
    return dst


def test_moe_budget_and_plan_agree(facet_bin, run_facet, moe_model):
    p = run_facet(["plan", str(moe_model), "--json"], timeout=60)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    weights = plan["weight_bytes"][plan["weights"]]
    kv = plan["kv_bytes_per_token_naive"]
    assert plan["n_active_params"] < plan["n_params"] // 4  # 60 experts, 4 chosen
    mem = int((weights + 100.5 * kv) / 0.9)
    want = (mem - mem // 100 * 10 - weights) // kv
    assert 95 <= want <= 105
    env = dict(os.environ, FACET_MEM_AVAILABLE=str(mem))
    with Server(facet_bin, moe_model, "--threads", "1", env=env, timeout=120) as s:
        budget, line = budget_line(s)
        assert budget == want, line
        st, r = s.post("/v1/completions", {"model": "qwen2-moe", "prompt": [1, 5, 9],
                                           "max_tokens": 8, "temperature": 0})
        assert st == 200, r
