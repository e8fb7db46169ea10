"""Issue 24: the Vulkan device — its limits, its selection, the validation layer — on
whatever Vulkan device the loader gives (CI: Mesa's lavapipe; no GPU has run these).

- `facet conform --backend vulkan` opens the device and prints its name, memory and the
  limits the kernels depend on; a checkpoint whose facts the device cannot serve is
  refused naming the fact, its value and the device limit. The oracle for the refusals
  is arithmetic over the printed limits: attn_flash.comp declares 12896 bytes of shared
  memory for head_dim 128 (an 8 x 128 query tile, a 16 x 128 K/V tile, 8 x 16 scores,
  3 x 8 statistics, floats), a bf16 matrix takes rows x ceil(cols / 2) x 4 bytes of one
  binding.
- `--device N` in run, bench, serve, conform and plan: device 0 is named with its
  memory; a number the machine does not have is refused naming it and the count.
- The Khronos validation layer (Debian's vulkan-validationlayers, scripts/setup) over
  the op unit test and a short run, conform and bench: the loader inserts the layer
  and the layer reports nothing.
The judgement with hand-made limits (no device): tests/unit/test_device_limits.c.
"""

import json
import os
import pathlib
import re
import subprocess

import pytest

from test_vulkan import need_vulkan, run  # noqa: F401  (module fixture: skips loudly)

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLED = REPO / "models" / "stories260k"
QWEN3_DIMS = REPO / "tests" / "data" / "ref" / "configs" / "Qwen__Qwen3-0.6B__dims"
os.environ.setdefault("LP_NUM_THREADS", "2")

LIMITS = re.compile(r"limits: shared memory (\d+) B \(maxComputeSharedMemorySize\), workgroup "
                    r"(\d+) invocations \((\d+) x (\d+) x (\d+)\), subgroup (\d+), storage range "
                    r"(\d+) B \(maxStorageBufferRange\), float16 (yes|no), int8 (yes|no), "
                    r"16-bit storage (yes|no), 8-bit storage (yes|no); buffers in "
                    r"(device-local host-visible|system \(host-visible\)) memory, heap ([\d.]+) GiB")
DEVICE = re.compile(r"device: vulkan device (\d+): (.+), ([\d.]+) GiB \(of (\d+) on this machine\)")


def device_info(facet_bin):
    p = run(facet_bin, "conform", BUNDLED, "--backend", "vulkan")
    assert p.returncode == 0, p.stdout + p.stderr
    d, m = DEVICE.search(p.stdout), LIMITS.search(p.stdout)
    assert d and m, p.stdout
    return d, [int(x) if x.isdigit() else x for x in m.groups()], p.stdout


def test_conform_prints_the_device_and_its_limits(facet_bin):
    d, lim, out = device_info(facet_bin)
    assert int(d.group(1)) < int(d.group(4)) and float(d.group(3)) > 0
    shared, inv, gx, gy, gz, subgroup, srange = lim[:7]
    # Vulkan's guaranteed minimums: 16384 bytes, 128 invocations (128, 128, 64), 2^27
    assert shared >= 16384 and inv >= 128 and gx >= 128 and gy >= 128 and gz >= 64
    assert subgroup >= 1 and srange >= 1 << 27
    assert "verdict: supported on vulkan" in out
    # --device 0 names the same device; --json carries the same limits
    p = run(facet_bin, "conform", BUNDLED, "--backend", "vulkan", "--device", 0)
    assert p.returncode == 0 and "device: vulkan device 0: " in p.stdout, p.stdout + p.stderr
    p = run(facet_bin, "conform", BUNDLED, "--backend", "vulkan", "--json", "-")
    dev = json.loads(p.stdout)["device"]
    assert dev["name"] == d.group(2) and dev["count"] == int(d.group(4))
    assert [dev["max_shared_bytes"], dev["max_invocations"], *dev["max_group_size"],
            dev["subgroup_size"], dev["max_storage_range"]] == lim[:7]
    assert json.loads(run(facet_bin, "conform", BUNDLED, "--json", "-").stdout)["device"] is None


def test_refused_by_the_device_limits(facet_bin):
    """Qwen3-0.6B's published dimensions (head_dim 128, a [151936][1024] bf16 lm_head,
    split by rows into bindings of maxStorageBufferRange, 16 at most): each need past
    this device's limit is one refusal naming the limit's value."""
    _, lim, _ = device_info(facet_bin)
    shared, srange = lim[0], lim[6]
    attn, lm_head = 4 * (8 * 128 + 16 * 128 + 8 * 16 + 3 * 8), 151936 * 512 * 4
    # a matrix is split by rows into at most 16 bindings of the range: rows of 2048 bytes
    per = srange // 2048
    parts = -(-151936 // per) if per else 1 << 30
    p = run(facet_bin, "conform", QWEN3_DIMS, "--backend", "vulkan")
    head = "REFUSED: head_dim=128 is not supported on vulkan (supported: head_dim <= "
    matrix = ("REFUSED: weight matrix=lm_head [151936][1024] bf16, %d bytes is not supported "
              "on vulkan (supported: <= 16 bindings of %d bytes per matrix on " % (lm_head, srange))
    assert (head in p.stdout) == (attn > shared), p.stdout
    if attn > shared:
        assert ("stages %d bytes of shared memory for head_dim 128, more than its "
                "maxComputeSharedMemorySize of %d bytes" % (attn, shared)) in p.stdout
    assert (matrix in p.stdout) == (parts > 16), p.stdout
    refused = attn > shared or parts > 16
    assert p.returncode == (2 if refused else 3), p.stdout + p.stderr
    # a device whose range needs 17 parts or more refuses it (the limit lowered)
    env = dict(os.environ, FACET_VK_MAX_STORAGE_RANGE=str(2048 * (151936 // 17)))
    p = subprocess.run([str(facet_bin), "conform", QWEN3_DIMS, "--backend", "vulkan"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert ("REFUSED: weight matrix=lm_head [151936][1024] bf16, %d bytes is not supported on "
            "vulkan (supported: <= 16 bindings of %d bytes" % (lm_head, 2048 * (151936 // 17))
            ) in p.stdout, p.stdout
    # plan says the same; run refuses the checkpoint before reading a weight
    p = run(facet_bin, "plan", QWEN3_DIMS, "--backend", "vulkan")
    assert (head in p.stdout) == (attn > shared) and "limits: shared memory" in p.stdout, p.stdout


def test_device_option_in_every_command(facet_bin):
    from server_harness import Server
    d, _, _ = device_info(facet_bin)
    count = int(d.group(4))
    missing = "--device 99: no such device (this machine has %d: 0..%d)" % (count, count - 1)
    quick = {
        "run": ["run", "--backend", "vulkan", "-n", 2],
        "bench": ["bench", BUNDLED, "--backend", "vulkan", "--shapes", 8, "--reps", 1,
                  "--concurrency", 1, "-n", 2, "--no-cold"],
        "conform": ["conform", BUNDLED, "--backend", "vulkan"],
        "plan": ["plan", BUNDLED, "--backend", "vulkan"],
        "serve": ["serve", BUNDLED, "--backend", "vulkan", "--port", 0],
    }
    for name, args in quick.items():
        p = run(facet_bin, *args, "--device", 99)
        assert p.returncode != 0 and missing in p.stderr, (name, p.stdout, p.stderr)
        if name == "serve":
            continue
        p = run(facet_bin, *args, "--device", 0)
        assert p.returncode == 0, (name, p.stderr)
        assert re.search(r"vulkan device 0: .+, [\d.]+ GiB", p.stdout + p.stderr), (name, p.stderr)
    with Server(facet_bin, BUNDLED, "--backend", "vulkan", "--device", 0) as srv:
        assert any(re.search(r"vulkan device 0: .+, [\d.]+ GiB", line) for line in srv.log)


def validated(cmd, env_extra=None):
    env = dict(os.environ, VK_INSTANCE_LAYERS="VK_LAYER_KHRONOS_validation",
               VK_LOADER_DEBUG="layer", LP_NUM_THREADS="2")
    env.update(env_extra or {})
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=300)
    out = p.stdout + p.stderr
    assert 'Insert instance layer "VK_LAYER_KHRONOS_validation"' in out, out[-3000:]
    messages = [l for l in out.splitlines()
                if "VUID-" in l or "Validation Error" in l or "Validation Warning" in l]
    assert not messages, "\n".join(messages[:20])
    return p


def test_no_validation_layer_messages(facet_bin):
    if not pathlib.Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json").exists():
        pytest.skip("SKIPPED LOUDLY: the Khronos validation layer is not installed "
                    "(Debian's vulkan-validationlayers; scripts/setup installs it)")
    ops = pathlib.Path(os.environ.get("FACET_BUILD_DIR", facet_bin.parent)) / "test_vulkan_ops"
    if ops.exists():
        assert validated([ops]).returncode == 0
    p = validated([facet_bin, "run", "--backend", "vulkan", "--json", "-n", 8])
    assert p.returncode == 0, p.stderr
    p = validated([facet_bin, "conform", BUNDLED, "--backend", "vulkan"])
    assert p.returncode == 0, p.stderr
    p = validated([facet_bin, "bench", BUNDLED, "--backend", "vulkan", "--shapes", 8, "--reps", 1,
                   "--concurrency", "1,2", "-n", 2, "--no-cold"])
    assert p.returncode == 0, p.stderr
