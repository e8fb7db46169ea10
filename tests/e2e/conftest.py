"""Shared pytest fixtures of the end-to-end tests (run with Debian's /usr/bin/python3).

Fixtures:
  repo_root        pathlib.Path of the repository
  facet_bin        the facet binary: env FACET_BIN, default <repo>/build/facet (fails
                   loudly when missing: build it with scripts/build build)
  facet_asan_bin   env FACET_ASAN_BIN (the sanitizer build); skips when unset/missing
  facet_shared     ../shared (env FACET_SHARED, default <repo>/../shared); skips loudly
                   when absent
  make_checkpoint  factory writing a seeded random-weight checkpoint from a config
                   (tests/ref/gen_checkpoint.py), cached for the session:
                     path = make_checkpoint(source, dtype="f32", shards=1, seed=0,
                                            shrink={} or None, overrides=None, **write_kw)
                   source: a config dict, a config.json path or a folder with one;
                   shrink: None = full size, {} = default shrink (2 layers, head_dim 32,
                   vocab 512), or shrink_config keyword arguments.
  reference_for    factory: reference_for(path) -> cached reference.Reference
  run_facet        run_facet(args, timeout=120, bin=None) -> subprocess.CompletedProcess
                   (text mode, stdout/stderr captured, never raises on exit status)
  facet_generate   facet_generate(model, prompt_ids, n, extra=(), bin=None, dump=True)
                   -> {"json": parsed --json object, "logits": float64 rows or None,
                   "proc": CompletedProcess}; greedy with --ignore-eos; asserts exit 0
                   with the stderr in the message.

tests/ref is put on sys.path, so test modules can `import reference, gen_checkpoint,
compare, safetensors_io, hf_facts`.
"""

import hashlib
import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "ref"))

import compare  # noqa: E402
import gen_checkpoint  # noqa: E402
import reference  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "evidence(checkpoints=[...] | 'supported-corpus', config_classes=[...], backend='cpu', "
        "weights=[...], oracle='...'): this test compares facet with an independent oracle "
        "for those rows of docs/SUPPORT.md; scripts/gen-support reads the marker (Validated)")


@pytest.fixture(scope="session")
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def facet_bin():
    p = pathlib.Path(os.environ.get("FACET_BIN", REPO / "build" / "facet"))
    if not p.is_file() or not os.access(p, os.X_OK):
        pytest.fail("facet binary %s not found (set FACET_BIN or run scripts/build build)" % p)
    return p


@pytest.fixture(scope="session")
def facet_asan_bin():
    v = os.environ.get("FACET_ASAN_BIN")
    if not v or not os.access(v, os.X_OK):
        pytest.skip("FACET_ASAN_BIN not set or not executable: sanitizer run skipped")
    return pathlib.Path(v)


@pytest.fixture(scope="session")
def facet_shared():
    p = pathlib.Path(os.environ.get("FACET_SHARED", REPO.parent / "shared"))
    if not p.is_dir():
        pytest.skip("SKIPPED LOUDLY: ../shared not found at %s (set FACET_SHARED); CI has it" % p)
    return p


@pytest.fixture(scope="session")
def make_checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    made = {}

    def make(source, dtype="f32", shards=1, seed=0, shrink=None, overrides=None, **write_kw):
        src = source if isinstance(source, dict) else os.path.abspath(str(source))
        key = json.dumps([src, dtype, shards, seed, shrink, overrides, write_kw], sort_keys=True,
                         default=str)
        if key not in made:
            name = hashlib.sha1(key.encode()).hexdigest()[:12]
            out = root / name
            gen_checkpoint.make_checkpoint(src, str(out), dtype=dtype, shards=shards, seed=seed,
                                           shrink=shrink, overrides=overrides, **write_kw)
            made[key] = out
        return made[key]

    return make


@pytest.fixture(scope="session")
def reference_for():
    refs = {}

    def get(path, **kw):
        key = (str(path), tuple(sorted(kw.items())))
        if key not in refs:
            refs[key] = reference.Reference(str(path), **kw)
        return refs[key]

    return get


def _run(bin_path, args, timeout):
    return subprocess.run([str(bin_path)] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def run_facet(facet_bin):
    def run(args, timeout=120, bin=None):
        return _run(bin or facet_bin, args, timeout)

    return run


@pytest.fixture
def facet_generate(facet_bin, tmp_path):
    counter = [0]

    def gen(model, prompt_ids, n, extra=(), bin=None, dump=True, timeout=300):
        counter[0] += 1
        dump_path = tmp_path / ("logits-%d.f32" % counter[0])
        args = ["run", str(model), "--prompt-ids", ",".join(str(int(t)) for t in prompt_ids),
                "-n", str(n), "--json", "--ignore-eos"]
        if dump:
            args += ["--dump-logits", str(dump_path)]
        args += list(extra)
        if "--weights" not in args:
            args += ["--weights", "f32"]  # the identity gates run float32 weights
        proc = _run(bin or facet_bin, args, timeout)
        assert proc.returncode == 0, "facet %s exited %d: %s" % (" ".join(args), proc.returncode,
                                                                   proc.stderr.strip()[-2000:])
        try:
            obj = json.loads(proc.stdout)
        except ValueError as e:
            raise AssertionError("facet --json printed no JSON object (%s): %r" % (e, proc.stdout[:500]))
        logits = None
        if dump:
            with open(os.path.join(str(model), "config.json")) as f:
                cfg = json.load(f)
            tc = gen_checkpoint.hf_facts.text_config(cfg)
            vocab = int(tc.get("vocab_size") or tc["padded_vocab_size"])  # ChatGLM: padded
            logits = compare.read_logits(str(dump_path), vocab)
        return {"json": obj, "logits": logits, "proc": proc}

    return gen
