"""`facet serve FILE.gguf` without a chat template says where a GGUF file keeps one
(its tokenizer.chat_template metadata), not the files of a Hugging Face folder it does not
have; and serve's and plan's --help say MODEL may be a GGUF file, as both accept it."""

import os
import subprocess

import pytest


def test_gguf_chat_unavailable_names_metadata(facet_bin, facet_shared):
    gguf = facet_shared / "corpus" / "gguf" / "models" / "qwen3-Q4_K_M.gguf"
    if not gguf.is_file():
        pytest.skip("SKIPPED LOUDLY: %s not found" % gguf)
    p = subprocess.Popen([str(facet_bin), "serve", str(gguf), "--port", "0"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         env=dict(os.environ, FACET_MEM_AVAILABLE=str(1 << 30)))
    try:
        line = p.stderr.readline()
    finally:
        p.kill()
        p.wait()
    assert "chat completions unavailable" in line, line
    assert "the GGUF metadata has no tokenizer.chat_template" in line, line
    assert "tokenizer_config.json" not in line, line


@pytest.mark.parametrize("cmd", ["serve", "plan"])
def test_help_says_gguf(run_facet, cmd):
    p = run_facet([cmd, "--help"])
    assert p.returncode == 0
    assert "MODEL" in p.stdout and "GGUF file" in p.stdout, p.stdout
