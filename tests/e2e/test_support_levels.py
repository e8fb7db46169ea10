"""Issue 22: docs/SUPPORT.md says how each claim was verified, and `facet onboard --gate`
records the level of a user's own checkpoint.

- Every (checkpoint or config class, backend) row of the Verification tables has a level
  in each weight-format cell; every Validated and Measured key resolves to evidence that
  exists in the repository (the test file and function, or the bench entry's heading).
- Evidence is derived: removing the test that validates the bundled model's int8 row
  drops it to Unverified, and the staleness check then fails.
- onboard --gate on the bundled model records Validated against its published ids;
  conform --ledger carries the level into --json; a reference that disagrees exits 4
  naming the first differing step; the float64 reference and reference logits work as
  oracles for a generated checkpoint.
"""

import ast
import json
import pathlib
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SUPPORT = REPO / "docs" / "SUPPORT.md"
LEVELS = ("Validated", "Measured", "Unverified", "Planned")


def verification_tables(text):
    """{(section, name, backend): [cells]} of the Verification section's tables."""
    rows = {}
    section = None
    for line in text[text.index("## Verification"):].splitlines():
        if line.startswith("### "):
            section = line[4:].strip()
        if section in ("Checkpoints", "Config classes") and line.startswith("| ") \
                and not line.startswith("| checkpoint |") and not line.startswith("| config class |"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[(section, cells[0], cells[1])] = cells[2:]
    return rows


def evidence_links(text):
    return dict(re.findall(r"^- ([VM]\d+): \[[^\]]*\]\(([^)]*)\)$", text, re.M))


def test_every_row_has_a_level_and_its_evidence_exists():
    text = SUPPORT.read_text()
    rows = verification_tables(text)
    names = sorted(p.name for p in (REPO / "tests" / "data" / "configs").iterdir() if p.is_dir())
    for name in names + ["stories260k"]:
        for backend in ("cpu", "vulkan"):
            assert ("Checkpoints", name, backend) in rows, (name, backend)
    links = evidence_links(text)
    assert links, "no evidence keys"
    for (section, name, backend), cells in rows.items():
        assert len(cells) == 5, (name, backend, cells)  # f32, bf16, f16, int8, q4
        if cells[0].startswith("Planned: "):
            assert cells[1:] == ["", "", "", ""] and len(cells[0]) > len("Planned: "), cells
            continue
        for c in cells:
            m = re.fullmatch(r"(Validated|Measured) \[([VM]\d+)\]|Unverified|Refused: --weights \w+ on vulkan", c)
            assert m, (name, backend, c)
            if m.group(2):
                assert m.group(2) in links, (name, c)
    for key, link in links.items():
        target = (SUPPORT.parent / link.split("#")[0]).resolve()
        assert target.is_file(), (key, link)
        title = re.search(r"^- %s: \[([^\]]*)\]" % key, text, re.M).group(1)
        if key.startswith("V"):
            test = title.split(" ")[0].split("::")[1]
            tree = ast.parse(target.read_text())
            assert any(isinstance(n, ast.FunctionDef) and n.name == test for n in tree.body), title
        else:
            anchor = link.split("#")[1]
            heads = [l.lstrip("#").strip() for l in target.read_text().splitlines() if l.startswith("#")]
            slugs = [re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads]
            assert anchor in slugs, (key, link)
    # the bundled model is validated in every format by the published ids
    assert all(c.startswith("Validated") for c in rows[("Checkpoints", "stories260k", "cpu")])


def test_removed_validating_test_drops_to_unverified(facet_bin, tmp_path):
    tests = tmp_path / "e2e"
    shutil.copytree(REPO / "tests" / "e2e", tests, ignore=shutil.ignore_patterns("node", "__pycache__"))
    (tests / "test_kernels_formats.py").unlink()  # the only test of stories260k's int8 row
    out = tmp_path / "SUPPORT.md"
    gen = ["/usr/bin/python3", str(REPO / "scripts" / "gen-support"), "--facet", str(facet_bin),
           "--tests-dir", str(tests)]
    proc = subprocess.run(gen + ["--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    before = verification_tables(SUPPORT.read_text())[("Checkpoints", "stories260k", "cpu")]
    after = verification_tables(out.read_text())[("Checkpoints", "stories260k", "cpu")]
    assert before[3].startswith("Validated") and after[3] == "Unverified", (before, after)
    assert after[0].startswith("Validated")  # still held by test_reference.py's logits test
    proc = subprocess.run(gen + ["--check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "not what the table and corpus generate" in proc.stderr


def run(facet_bin, *args):
    return subprocess.run([str(facet_bin), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_gate_on_the_bundled_model_records_validated(facet_bin, tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    model = REPO / "models" / "stories260k"
    p = run(facet_bin, "onboard", model, "--gate", "--ledger", ledger)
    assert p.returncode == 0, p.stderr
    line = json.loads(ledger.read_text().splitlines()[-1])
    v = line["verification"]
    assert v["level"] == "validated" and v["weights"] == "f32" and v["kv_cache"] == "f32"
    assert v["oracle"].startswith("published ids") and v["steps_compared"] == 200
    assert line["checkpoint"] == str(model.resolve())
    out = tmp_path / "conform.json"
    p = run(facet_bin, "conform", model, "--ledger", ledger, "--json", out)
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["verification"]["level"] == "validated"
    assert "verification: validated against published ids" in p.stdout
    # a config.json path names the same checkpoint (its verdict is pending the probe)
    p = run(facet_bin, "conform", model / "config.json", "--ledger", ledger, "--json", out)
    assert p.returncode == 3, p.stderr
    assert json.loads(out.read_text())["verification"]["level"] == "validated"
    p = run(facet_bin, "conform", model, "--json", out)  # no ledger: no level
    assert json.loads(out.read_text())["verification"] is None


def test_gate_names_the_first_differing_step(facet_bin, tmp_path):
    exp = json.loads((REPO / "models" / "stories260k" / "expected.json").read_text())["greedy_from_bos"]
    ids = list(exp["generated_ids"])
    ids[7] = (ids[7] + 1) % 512
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"prompt_ids": exp["input_ids"], "generated_ids": ids}))
    ledger = tmp_path / "ledger.jsonl"
    p = run(facet_bin, "onboard", REPO / "models" / "stories260k", "--gate", "--reference", ref,
            "--ledger", ledger)
    assert p.returncode == 4, p.stderr
    assert "step 7: facet chose token %d" % exp["generated_ids"][7] in p.stderr
    assert "chose %d" % ids[7] in p.stderr
    v = json.loads(ledger.read_text())["verification"]
    assert v["level"] == "failed" and v["first_difference"] == 7


def test_gate_against_the_float64_reference_and_its_logits(facet_bin, make_checkpoint, tmp_path):
    path = make_checkpoint(REPO / "tests" / "data" / "configs" / "Qwen__Qwen3-0.6B__dims", shrink={})
    ledger = tmp_path / "ledger.jsonl"
    p = run(facet_bin, "onboard", path, "--gate", "-n", "8", "--ledger", ledger)
    assert p.returncode == 0, p.stderr
    v = json.loads(ledger.read_text())["verification"]
    assert v["oracle"].startswith("float64 reference") and v["level"] == "validated"
    assert v["max_relative_error"] < 1e-4 and v["prompt_tokens"] == 16
    # the same oracle as logits rows: matching passes, a perturbed prompt row fails
    dump = tmp_path / "ref.f32"
    ids = "1,5,9,33,100,7"
    r = subprocess.run(["/usr/bin/python3", str(REPO / "tests" / "ref" / "reference.py"), str(path),
                        "--prompt-ids", ids, "-n", "6", "--dump-logits", str(dump)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    p = run(facet_bin, "onboard", path, "--gate", "--reference-logits", dump, "--prompt-ids", ids)
    assert p.returncode == 0, p.stderr
    import numpy as np
    rows = np.fromfile(dump, dtype="<f4")
    rows[3 * 512 + 10] += 1.0  # prompt row 3
    bad = tmp_path / "bad.f32"
    rows.tofile(bad)
    p = run(facet_bin, "onboard", path, "--gate", "--reference-logits", bad, "--prompt-ids", ids)
    assert p.returncode == 4 and "logits row 3 (prompt)" in p.stderr, p.stderr


def test_gate_option_errors(facet_bin):
    p = run(facet_bin, "onboard", REPO / "models" / "stories260k", "--reference", "x.json")
    assert p.returncode == 1 and "need --gate" in p.stderr
    p = run(facet_bin, "onboard", REPO / "models" / "stories260k", "--gate", "--reference-logits", "x")
    assert p.returncode == 1 and "--reference-logits needs --prompt-ids" in p.stderr
    # --prompt-ids beside an ids file (or expected.json) would go unused: refused, not ignored
    p = run(facet_bin, "onboard", REPO / "models" / "stories260k", "--gate", "--prompt-ids", "1,403")
    assert p.returncode == 1 and "--prompt-ids goes with --reference-logits" in p.stderr, p.stderr
    assert "expected.json holds its own prompt" in p.stderr, p.stderr


def test_gate_refuses_a_broken_reference(facet_bin, tmp_path):
    """A reference the gate cannot compare against is unusable input (exit 1), never
    'validated' or a recorded 'failed': a non-finite logit made the row's relative error
    NaN (inf - inf), which passed the 1e-4 threshold, and a generated id outside the
    vocabulary was recorded as facet's failure."""
    import numpy as np
    model = REPO / "models" / "stories260k"
    dump = tmp_path / "ok.f32"
    p = run(facet_bin, "run", model, "--prompt-ids", "1,403", "-n", "3", "--dump-logits", dump)
    assert p.returncode == 0, p.stderr
    rows = np.fromfile(dump, dtype="<f4")
    for value in (np.inf, np.nan):
        bad = rows.copy()
        bad[512 + 5] = value  # row 1, token 5
        path = tmp_path / "bad.f32"
        bad.tofile(path)
        ledger = tmp_path / "ledger.jsonl"
        p = run(facet_bin, "onboard", model, "--gate", "--reference-logits", path,
                "--prompt-ids", "1,403", "--ledger", ledger)
        assert p.returncode == 1, (value, p.returncode, p.stderr)
        assert "row 1, token 5" in p.stderr and "must be finite" in p.stderr, p.stderr
        assert not ledger.exists()
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"prompt_ids": [1], "generated_ids": [403, 99999]}))
    p = run(facet_bin, "onboard", model, "--gate", "--reference", ref)
    assert p.returncode == 1 and "generated id 99999 at 1 is outside the vocabulary" in p.stderr, p.stderr
    ref.write_text("{}")
    p = run(facet_bin, "onboard", model, "--gate", "--reference", ref)
    assert p.returncode == 1 and '"prompt_ids" must be' in p.stderr, p.stderr


def test_conform_ledger_skips_malformed_lines(facet_bin, tmp_path):
    """conform --ledger takes only a verification as onboard writes it: a level that was
    not a string was printed through printf's %s as a NULL pointer ('(null)', undefined
    behaviour), and an oracle holding a newline printed a line of its own (a forged
    'REFUSED:'). A ledger with no usable line says so instead of printing nothing."""
    model = REPO / "models" / "stories260k"
    key = str(model.resolve())
    ledger = tmp_path / "ledger.jsonl"
    good = {"level": "validated", "oracle": "published ids", "backend": "cpu", "weights": "f32"}
    ledger.write_text("\n".join(json.dumps(x) for x in [
        {"checkpoint": key, "verification": good},
        {"checkpoint": key, "verification": {"level": 5}},
        {"checkpoint": key, "verification": dict(good, level="failed", oracle="x\nREFUSED: forged")},
    ]) + "\nnot json\n")
    out = tmp_path / "c.json"
    p = run(facet_bin, "conform", model, "--ledger", ledger, "--json", out)
    assert p.returncode == 0, p.stderr
    assert "(null)" not in p.stdout and "REFUSED" not in p.stdout, p.stdout
    assert "verification: validated against published ids (cpu, f32 weights" in p.stdout, p.stdout
    assert json.loads(out.read_text())["verification"] == good
    for text in ("garbage\n", json.dumps({"checkpoint": key, "verification": {"level": 5}}) + "\n"):
        ledger.write_text(text)
        p = run(facet_bin, "conform", model, "--ledger", ledger)
        assert p.returncode == 0 and "(null)" not in p.stdout, p.stdout
        assert "verification: none recorded for this checkpoint in ledger" in p.stdout, p.stdout


def test_onboard_appends_after_a_ledger_cut_short(facet_bin, tmp_path):
    """A ledger whose last line was cut short (no newline) had the new line glued to the
    fragment: the gate passed (exit 0) but conform --ledger never found the level."""
    model = REPO / "models" / "stories260k"
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text('{"checkpoint": "x", "verif')
    p = run(facet_bin, "onboard", model, "--gate", "--ledger", ledger)
    assert p.returncode == 0, p.stderr
    lines = ledger.read_text().splitlines()
    assert lines[0] == '{"checkpoint": "x", "verif' and len(lines) == 2
    assert json.loads(lines[1])["verification"]["level"] == "validated"
    p = run(facet_bin, "conform", model, "--ledger", ledger)
    assert "verification: validated against published ids" in p.stdout, p.stdout
    p = run(facet_bin, "onboard", model, "--ledger", ledger)  # a whole last line: no blank line
    assert p.returncode == 0 and len(ledger.read_text().splitlines()) == 3
    p = run(facet_bin, "onboard", model, "--ledger", "/dev/full")
    assert p.returncode == 1 and "cannot append to /dev/full" in p.stderr, p.stderr
    # a ledger that is a pipe (no seeking) is still appended to
    p = subprocess.run(f"{facet_bin} onboard {model} --ledger /dev/stdout | cat", shell=True,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and '"verification"' not in p.stdout and '{"architecture"' in p.stdout, p.stderr
