"""`facet run --prompt-ids` from an argument, a file (@FILE) or standard input (-), as
comma- or whitespace-separated ids or a JSON array (issue 23, item 2).

Oracle: the bundled model's expected.json (prompt ids and the greedy continuation
transformers produced), through the plain argument form; every other form must give
the same prompt_ids and generated_ids. A 65,000-id file (about 325 KB, past what one
command-line argument may hold on Linux: MAX_ARG_STRLEN is 128 KiB) is parsed whole: the
context error names all 65,000 tokens.
"""

import json
import subprocess

import pytest

from conftest import REPO

BUNDLED = REPO / "models" / "stories260k"
EXPECTED = json.loads((BUNDLED / "expected.json").read_text())


def case():
    """(prompt ids, the first 16 ids of its greedy continuation) of expected.json."""
    c = EXPECTED["prompts"][0]
    return c["prompt_ids"], c["generated_ids"][:16]


def run(facet_bin, ids_arg, n, stdin=None):
    return subprocess.run([str(facet_bin), "run", str(BUNDLED), "--prompt-ids", ids_arg,
                           "-n", str(n), "--ignore-eos", "--json", "--no-cache"],
                          input=stdin, capture_output=True, text=True, timeout=120)


def generated(proc):
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    return out["prompt_ids"], out["generated_ids"]


@pytest.mark.parametrize("form", ["commas", "spaces", "lines", "json", "json-lines"])
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_prompt_ids_file_and_stdin(facet_bin, tmp_path, form, source):
    ids, want = case()
    text = {
        "commas": ",".join(map(str, ids)),
        "spaces": " ".join(map(str, ids)) + "\n",
        "lines": "\n".join(map(str, ids)) + "\n",
        "json": json.dumps(ids),
        "json-lines": "[\n" + ",\n".join("  %d" % i for i in ids) + "\n]\n",
    }[form]
    if source == "file":
        f = tmp_path / "ids.txt"
        f.write_text(text)
        proc = run(facet_bin, "@" + str(f), len(want))
    else:
        proc = run(facet_bin, "-", len(want), stdin=text)
    assert generated(proc) == (ids, want)
    # the argument form agrees (the oracle's ids through the path that existed before)
    assert generated(run(facet_bin, ",".join(map(str, ids)), len(want))) == (ids, want)


def test_prompt_ids_65000_from_file(facet_bin, tmp_path):
    f = tmp_path / "long.txt"
    f.write_text(",".join(str(5 + i % 400) for i in range(65000)) + "\n")
    assert f.stat().st_size > 128 * 1024  # more than one argument may hold
    proc = run(facet_bin, "@" + str(f), 1)
    assert proc.returncode == 1, proc.stderr
    assert "65000 tokens" in proc.stderr and "512" in proc.stderr, proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("text,want", [
    ("1,40x3\n", "ids.txt: bad token '40x3' at index 1"),
    ("1 2 -3\n", "ids.txt: bad token '-3' at index 2"),
    ("1,2,\n", "ids.txt: unexpected ',' after id 2 at the end"),
    ("[1, 2\n", "ids.txt: the JSON array has no closing ']'"),
    ("[1, 2] 3\n", "ids.txt: unexpected '3' after the ids"),
    ("1,2147483648\n", "ids.txt: bad token '2147483648' at index 1"),
])
def test_prompt_ids_file_errors_name_file_and_token(facet_bin, tmp_path, text, want):
    f = tmp_path / "ids.txt"
    f.write_text(text)
    proc = run(facet_bin, "@" + str(f), 1)
    assert proc.returncode == 1
    assert proc.stderr.startswith("facet: --prompt-ids: " + str(tmp_path)), proc.stderr
    assert want in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_prompt_ids_missing_file_and_stdin_errors(facet_bin, tmp_path):
    proc = run(facet_bin, "@" + str(tmp_path / "none.txt"), 1)
    assert proc.returncode == 1
    assert proc.stderr == "facet: --prompt-ids: %s: cannot open: No such file or directory\n" \
        % (tmp_path / "none.txt")
    proc = run(facet_bin, "-", 1, stdin="7 x\n")
    assert proc.returncode == 1
    assert proc.stderr.startswith("facet: --prompt-ids: standard input: bad token 'x' at index 1")


def test_prompt_ids_vocab_and_empty_errors_name_the_source(facet_bin, tmp_path):
    """An id outside the vocabulary or a file with no ids names the file (or standard
    input), as the parse errors do; they said 'prompt token 512 ...' and 'the prompt is
    empty ...; give text, or --prompt-ids' without saying where the ids came from."""
    f = tmp_path / "ids.txt"
    f.write_text("1 2 512\n")
    proc = run(facet_bin, "@" + str(f), 1)
    assert proc.returncode == 1
    assert proc.stderr == "facet: --prompt-ids: %s: prompt token 512 at index 2 is outside [0, 512)\n" % f
    f.write_text("\n")
    proc = run(facet_bin, "@" + str(f), 1)
    assert proc.returncode == 1 and proc.stderr == "facet: --prompt-ids: %s: no token ids\n" % f
    proc = run(facet_bin, "-", 1, stdin="[]")
    assert proc.returncode == 1 and proc.stderr == "facet: --prompt-ids: standard input: no token ids\n"


def test_detokenize_bad_id_index_counts_all_arguments(facet_bin):
    """detokenize's ids may come as several arguments; the bad one is named by its index
    in the whole list (0-based, as 'prompt token ... at index N'), not as an "id"."""
    proc = subprocess.run([str(facet_bin), "detokenize", str(BUNDLED), "1", "403", "x"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "bad token 'x' at index 2:" in proc.stderr, proc.stderr
