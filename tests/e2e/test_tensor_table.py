"""The tensor table (src/model/tensors.c) is the one list of tensor names the probe and
the loader read: a checkpoint whose decoder sits under any of the prefixes the table
knows loads and generates exactly what the bundled model does.

Before the table the probe knew five prefixes ("model.", "model.language_model.",
"language_model.model.", "transformer." and none) and the loader three, so a checkpoint
under "transformer." or none passed the probe and then failed to load with
"tensor 'model.embed_tokens.weight' is missing".

Oracle: the bundled model's expected.json (transformers' greedy ids for its prompt),
with only the tensor names changed in the safetensors header (the data bytes are the
same).
"""

import json
import os
import shutil
import struct
import subprocess

import pytest

from conftest import REPO

BUNDLED = REPO / "models" / "stories260k"
EXPECTED = json.loads((BUNDLED / "expected.json").read_text())["prompts"][0]


def renamed_copy(tmp_path, prefix):
    d = tmp_path / "m"
    shutil.copytree(BUNDLED, d)
    for f in d.iterdir():
        os.chmod(f, 0o644)
    st = d / "model.safetensors"
    data = st.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    renamed = {}
    for name, v in header.items():
        if name.startswith("model."):
            name = prefix + name[len("model."):]
        renamed[name] = v
    assert any(k.startswith(prefix + "layers.0.") for k in renamed)
    h = json.dumps(renamed).encode()
    h += b" " * ((8 - len(h) % 8) % 8)  # keep the data 8-byte aligned
    st.write_bytes(struct.pack("<Q", len(h)) + h + data[8 + n:])
    return d


@pytest.mark.parametrize("prefix", ["transformer.", "", "language_model.model.",
                                    "model.language_model."])
def test_every_known_prefix_loads(facet_bin, tmp_path, prefix):
    d = renamed_copy(tmp_path, prefix)
    want = EXPECTED["generated_ids"][:12]
    proc = subprocess.run([str(facet_bin), "run", str(d), "--prompt-ids",
                           ",".join(map(str, EXPECTED["prompt_ids"])), "-n", str(len(want)),
                           "--ignore-eos", "--json", "--no-cache"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["generated_ids"] == want
    conform = subprocess.run([str(facet_bin), "conform", str(d)], capture_output=True,
                             text=True, timeout=60)
    assert conform.returncode == 0, conform.stdout + conform.stderr


def test_unknown_prefix_is_named(facet_bin, tmp_path):
    d = renamed_copy(tmp_path, "decoder.")
    proc = subprocess.run([str(facet_bin), "run", str(d), "-n", "1", "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "checkpoint has no decoder layer tensors (model.layers.0.*)" in proc.stderr, \
        proc.stderr
