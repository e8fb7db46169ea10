"""`facet serve` on a recurrent (Mamba) model: there is no KV cache to size, and the
startup line says so, not the unrelated "the plan's context differs from the session's"
it gave before (plan and session agree on the context; the check stops at 0 KV bytes per
token). Oracle: the model's facts (no attention layer, so no KV cache, `facet plan`)."""

import os
import shutil
import subprocess

import mamba_ref  # tests/ref, on sys.path by conftest


def test_mamba_budget_line_says_no_kv_cache(facet_bin, tmp_path, repo_root):
    path = mamba_ref.write(mamba_ref.shrink(mamba_ref.MAMBA_130M), str(tmp_path / "ck"))
    shutil.copy(repo_root / "models" / "stories260k" / "tokenizer.json", tmp_path / "ck")
    p = subprocess.Popen([str(facet_bin), "serve", str(path), "--port", "0"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         env=dict(os.environ, FACET_MEM_AVAILABLE=str(1 << 30)))
    lines = []
    try:
        for line in p.stderr:
            lines.append(line)
            if "listening on" in line:
                break
    finally:
        p.kill()
        p.wait()
    text = "".join(lines)
    budget = [ln for ln in lines if "KV budget" in ln and "listening" not in ln]
    assert budget, text
    assert "context differs" not in budget[0], text
    assert "no KV cache" in budget[0], text
