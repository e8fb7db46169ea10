"""Pipeline-parallel inference over MPI (issue 21) against the single process.

Each case runs the same greedy generation twice: `facet run` alone, and under
`mpirun --oversubscribe -np P facet run ... --pipeline-parallel P` (every rank loading
only its stage's layers; rank 0 embedding, sampling and printing). Oracle: the single
process's own output. In F32 (--weights f32 --kv-cache f32) a stage runs the same
kernels on the same rows, so the logits must agree within 1e-5 and the ids exactly.
Refusals (a split the facts cannot take, flags without mpirun) need no MPI.

Skips loudly when mpirun is absent or facet was built without MPI. Open MPI refuses to
run as root unless told: the environment below allows it (CI runs as root).
"""

import json
import os
import re
import shutil
import signal
import subprocess

import numpy as np
import pytest

import compare

MPIRUN = shutil.which("mpirun")

# tiny shapes: 2 cores run every rank (8 heads of 8 = hidden 64 for Llama and Mixtral,
# at least 2 KV heads so T = 2 divides them; 4 layers; vocab 512)
SHRINK = {"num_hidden_layers": 4, "head_dim": 8, "max_heads": 8}
CELLS = {
    "llama": ("meta-llama__Meta-Llama-3-8B", SHRINK),
    "qwen3": ("Qwen__Qwen3-0.6B__dims", SHRINK),
    "mixtral": ("mistralai__Mixtral-8x7B-v0.1", SHRINK),
}
PROMPT = [int(x) for x in np.random.default_rng(21).integers(0, 512, 12)]
N_GEN = 6
F32 = ["--weights", "f32", "--kv-cache", "f32", "--no-cache", "--threads", "1"]


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               # containers often forbid the cross-memory attach of shared-memory messages
               OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    return env


@pytest.fixture(scope="module")
def mpi(facet_bin):
    if not MPIRUN:
        pytest.skip("SKIPPED LOUDLY: mpirun not found (apt-get install openmpi-bin "
                    "libopenmpi-dev, scripts/setup); the MPI tests did not run")
    p = subprocess.run([facet_bin, "run", "--pipeline-parallel", "2", "-n", "1"],
                       capture_output=True, text=True, timeout=60)
    if "built without MPI" in p.stderr:
        pytest.skip("SKIPPED LOUDLY: facet was built without MPI (CMake FACET_MPI); the MPI "
                    "tests did not run")
    return facet_bin


def checkpoint(make_checkpoint, repo_root, name):
    src, shrink = CELLS[name]
    return make_checkpoint(repo_root / "tests" / "data" / "configs" / src, dtype="f32",
                           shrink=shrink)


def generate(cmd_prefix, facet_bin, path, tmp_path, tag, extra=(), timeout=120):
    dump = tmp_path / ("%s.f32" % tag)
    cmd = cmd_prefix + [facet_bin, "run", str(path), "--prompt-ids",
                        ",".join(map(str, PROMPT)), "-n", str(N_GEN), "--json", "--ignore-eos",
                        "--dump-logits", str(dump)] + F32 + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env())
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), compare.read_logits(str(dump), 512), p


def mpirun(n):
    return [MPIRUN, "--oversubscribe", "-np", str(n)]


SPLITS = [("llama", 2, 1), ("qwen3", 2, 1), ("mixtral", 2, 1), ("llama", 4, 1),
          ("llama", 1, 2), ("qwen3", 1, 2), ("mixtral", 1, 2), ("qwen3", 2, 2)]


@pytest.mark.parametrize("name,P,T", SPLITS, ids=["%s-p%d-t%d" % c for c in SPLITS])
def test_parallel_matches_single_process(mpi, make_checkpoint, repo_root, tmp_path, name, P, T):
    """Greedy ids identical and logits within 1e-5 of the single process (relative error
    of each row, compare.relative_errors, as the reference tests measure), every position
    of the prompt and the generation. A pipeline runs the same rows through the same
    kernels: equal to the bit. A tensor split sums its ranks' partial outputs in another
    order: float32 rounding apart (measured 1.4e-6 to 2.4e-6)."""
    path = checkpoint(make_checkpoint, repo_root, name)
    one, logits1, _ = generate([], mpi, path, tmp_path, "one")
    # a pipeline cuts the 12-token prompt into 3 micro-batches (forced: by itself it
    # splits chunks of 32 rows or more), each stage running them in turn
    mb = ["-x", "FACET_MICRO_BATCHES=3"] if P > 1 else []
    par, logitsP, proc = generate(mpirun(P * T) + mb, mpi, path, tmp_path, "par",
                                  ["--pipeline-parallel", str(P), "--tensor-parallel", str(T)])
    assert "pipeline of %d stages x %d tensor ranks" % (P, T) in proc.stderr, proc.stderr[-2000:]
    m = re.search(r"(\d+) forward steps, (\d+) of them in (\d+) micro-batches", proc.stderr)
    assert m and m.group(2, 3) == (("1", "3") if P > 1 else ("0", "0")), proc.stderr[-2000:]
    assert par["generated_ids"] == one["generated_ids"]
    assert logitsP.shape == logits1.shape == (len(PROMPT) + N_GEN - 1, 512)
    err = compare.relative_errors(logitsP, logits1).max()
    assert err < 1e-5, err
    if T == 1:
        assert np.array_equal(logitsP, logits1)


def test_split_refused_before_loading(mpi, make_checkpoint, repo_root, run_facet):
    """More stages than layers, or a tensor split the heads do not divide: refused
    naming the fact, its value, the divisor and the values that would work, before MPI
    or any weight (no mpirun needed)."""
    path = checkpoint(make_checkpoint, repo_root, "qwen3")  # 8 heads, 4 KV heads, 4 layers
    p = run_facet(["run", path, "--prompt-ids", "1,2", "-n", "1", "--pipeline-parallel", "5"])
    assert p.returncode == 2  # refused, as a refused checkpoint
    assert "num_hidden_layers=4 must be >= the 5 stages" in p.stderr, p.stderr
    assert "P from 1 to 4 would work" in p.stderr
    p = run_facet(["run", path, "--prompt-ids", "1,2", "-n", "1", "--tensor-parallel", "3"])
    assert p.returncode == 2
    assert "num_attention_heads=8 is not divisible by 3" in p.stderr, p.stderr
    assert "its divisors: 1, 2, 4, 8;" in p.stderr
    cfg = json.load(open(os.path.join(path, "config.json")))
    ok = [t for t in range(1, 65) if cfg["num_attention_heads"] % t == 0 and
          cfg["num_key_value_heads"] % t == 0 and cfg["intermediate_size"] % t == 0]
    assert "num_key_value_heads and the FFN width: %s" % ", ".join(map(str, ok)) in p.stderr


def test_pipeline_flag_without_mpirun(mpi, make_checkpoint, repo_root, run_facet):
    """A process started without mpirun and asked for 2 stages says how to start it."""
    path = checkpoint(make_checkpoint, repo_root, "llama")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}
    p = subprocess.run([mpi, "run", str(path), "--prompt-ids", "1,2", "-n", "1",
                        "--pipeline-parallel", "2"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 1
    assert "mpirun -np 2 facet" in p.stderr, p.stderr


def test_bench_under_mpirun(mpi, repo_root, tmp_path):
    """`mpirun -np 2 facet bench --pipeline-parallel 2`: one load, one session through the
    job, rank 0 printing and writing the prefill and decode figures. Steps counted by
    hand: warm-up 1 + prefill of 8 and of 40 tokens (40 >= 2 x 16 rows: the one chunk
    split in 2 micro-batches) + for concurrency 1 one 16-token prompt and 4 steps, for 2
    two prompts and 4 steps = 14. Without mpirun the flag says how to start it."""
    model = repo_root / "models" / "stories260k"
    out = tmp_path / "bench.json"
    p = subprocess.run(mpirun(2) + [mpi, "bench", str(model), "--pipeline-parallel", "2",
                                    "--shapes", "8,40", "--reps", "1", "--concurrency", "1,2",
                                    "-n", "4", "--threads", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=120, env=mpi_env())
    assert p.returncode == 0, p.stderr[-3000:]
    assert "pipeline of 2 stages x 1 tensor ranks" in p.stderr
    assert "14 forward steps, 1 of them in 2 micro-batches" in p.stderr, p.stderr[-2000:]
    j = json.load(open(out))
    assert (j["pipeline_parallel"], j["tensor_parallel"]) == (2, 1)
    assert [r["tokens"] for r in j["prefill"]] == [8, 40]
    assert [r["concurrency"] for r in j["decode"]] == [1, 2]
    assert all(r["tok_s"] > 0 for r in j["prefill"])
    assert all(r["aggregate_tok_s"] > 0 and r["bytes_per_step"] > 0 for r in j["decode"])
    assert p.stdout.count("\n") > 5  # the tables, on rank 0's stdout once
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}
    p = subprocess.run([mpi, "bench", str(model), "--pipeline-parallel", "2"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 1 and "mpirun -np 2 facet" in p.stderr, p.stderr


def test_refusal_under_mpirun_exits_2(mpi, repo_root):
    """A refusal every rank meets at load (tensor parallel of a GGUF file whose layers stay
    Q4_0 blocks, FACET_GGUF_BLOCKS=1) exits 2 as a refusal does alone: the followers
    returned 1, and mpirun's status is the first failing rank's."""
    gguf = repo_root / "tests" / "data" / "gguf" / "qwen3-Q4_0.gguf"
    env = dict(mpi_env(), FACET_GGUF_BLOCKS="1")
    for _ in range(3):  # which rank fails first varies: before, 1 in about 1 of 3 runs
        p = subprocess.run(mpirun(2) + ["-x", "FACET_GGUF_BLOCKS", mpi, "run", str(gguf),
                                        "--prompt-ids", "1,2", "-n", "1", "--tensor-parallel",
                                        "2"], capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 2, p.stderr[-2000:]
        assert "--tensor-parallel cannot cut a Q4_0 matrix (GGUF block type)" in p.stderr

def test_job_size_mismatch(mpi, make_checkpoint, repo_root, tmp_path):
    """mpirun -np 2 with --pipeline-parallel 4: every rank refuses, no hang."""
    path = checkpoint(make_checkpoint, repo_root, "llama")
    p = subprocess.run(mpirun(2) + [mpi, "run", str(path), "--prompt-ids", "1,2", "-n", "1",
                                    "--pipeline-parallel", "4"] + F32,
                       capture_output=True, text=True, timeout=60, env=mpi_env())
    assert p.returncode != 0
    assert "mpirun -np 4 facet" in p.stderr, p.stderr


def test_serve_batched_through_rank_0(mpi, tmp_path, repo_root):
    """`mpirun -np 2 facet serve --pipeline-parallel 2`: rank 0 owns HTTP, the tokenizer
    and the sampler; 8 concurrent greedy completions (batched together, the prefix cache
    copying sequences on every rank, each step of several entries split into 2
    micro-batches so the stages overlap: FACET_MICRO_BATCHES=2) give the texts the
    single-process server gives.
    SIGTERM to mpirun ends the job cleanly (rank 0 stops its followers)."""
    import concurrent.futures

    from server_harness import Server

    wrapper = tmp_path / "facet-mpi"
    # micro-batches forced: by itself the split waits for chunks of 32 rows, and these
    # steps hold up to 8 (a stage reads its weights once per micro-batch)
    wrapper.write_text("#!/bin/sh\nexec %s --oversubscribe -np 2 -x FACET_MICRO_BATCHES=2 %s "
                       "\"$@\"\n" % (MPIRUN, mpi))
    wrapper.chmod(0o755)
    model = repo_root / "models" / "stories260k"
    prompts = [[1, 403, 407, 261 + i, 300 + 3 * i] for i in range(8)]

    def texts(server):
        def one(p):
            status, r = server.post("/v1/completions", {"prompt": p, "temperature": 0,
                                                        "max_tokens": 24})
            assert status == 200, r
            return r["choices"][0]["text"]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            return list(ex.map(one, prompts))

    args = ["--threads", "1", "--max-batch", "8", "--kv-cache", "f32", "--weights", "f32"]
    with Server(mpi, model, *args, env=mpi_env()) as s:
        want = texts(s)
    s = Server(wrapper, model, *args, "--pipeline-parallel", "2", env=mpi_env())
    try:
        got = texts(s)
        got_again = texts(s)  # a second round starts from cached prefixes
        status, _ = s.post("/v1/embeddings", {"input": "hello"})
        assert status != 200  # one session per job: refused, not wrong
    finally:
        # mpirun forwards SIGTERM to every rank and exits 1 for having been signalled,
        # however its processes end: rank 0 shuts down and stops its follower
        rc = s.stop(signal.SIGTERM, 30)
    log = "".join(s.log)
    assert rc in (0, 1) and "facet serve: stopped" in log, log[-3000:]
    assert got == want and got_again == want
    # the texts above came through micro-batches: rank 0 split steps holding several
    # sequences (decodes batched together) into 2, one per stage, and says how many
    m = re.search(r"(\d+) forward steps, (\d+) of them in (\d+) micro-batches, (\d+) of those "
                  r"holding several sequences", log)
    assert m, log[-3000:]
    steps, split, mbs, multi = map(int, m.groups())
    assert 0 < multi <= split <= steps and mbs == 2 * split, m.group(0)


def rank_pids(marker, rank):
    """Pids of processes whose command line holds `marker` and whose MPI rank is `rank`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read().decode(errors="replace")
            env = open("/proc/%s/environ" % d, "rb").read().decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and ("\0OMPI_COMM_WORLD_RANK=%d\0" % rank) in "\0" + env:
            pids.append(int(d))
    return pids


def test_dead_rank_ends_the_job(mpi, make_checkpoint, repo_root):
    """A stage killed mid-generation ends the whole job with an error naming the rank,
    instead of leaving rank 0 waiting for its hidden states."""
    import time

    path = checkpoint(make_checkpoint, repo_root, "llama")
    p = subprocess.Popen(mpirun(2) + [mpi, "run", str(path), "--prompt-ids", "1,2,3", "-n",
                                      "8000", "--ignore-eos", "--pipeline-parallel", "2"] + F32,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=mpi_env())
    victim = []
    t0 = time.time()
    while not victim and time.time() - t0 < 20 and p.poll() is None:
        victim = rank_pids(str(path), 1)
        time.sleep(0.05)
    assert victim, "rank 1 never started"
    time.sleep(0.3)  # inside the generation
    os.kill(victim[0], signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("the job hung after rank 1 died")
    assert p.returncode != 0
    assert "rank 1" in err and ("signal 9" in err or "Killed" in err), err[-3000:]
