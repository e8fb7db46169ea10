"""The command-line synopsis is written in three places — each command's --help, README.md
and DESIGN.md — and the two documents are checked here against --help, the one the
code prints: every fenced synopsis line `facet CMD ...` (with its indented continuation
lines) must name exactly the options of `facet CMD --help`'s usage lines (and those
name every option the help describes or its example uses), so an option added
to the code and its --help but not to the docs (or dropped from the code but left in
the docs) fails. Every command `facet --help` lists must have a synopsis in both.

Each command's --help also ends with a one-line example (`example: facet CMD ...`),
which is run here from the repository root (with the bundled model) and must exit 0.
"""

import os
import re
import shlex
import signal
import subprocess
import urllib.request

import pytest

from conftest import REPO

# an option: -x or --word-word, not preceded by a word character or a dash
# ("top-k", "min-p", "->" and a lone "-" are not options)
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SYNOPSIS = re.compile(r"^facet\s+([a-z]+)\b")


def options(text):
    return set(OPTION.findall(text)) - {"-h", "--help"}


def commands(facet_bin):
    out = subprocess.run([str(facet_bin), "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    section = out.split("commands:", 1)[1].split("\n\n", 1)[0]
    cmds = [line.split()[0] for line in section.splitlines() if line.strip()]
    assert len(cmds) >= 9, out
    return cmds


def help_text(facet_bin, cmd):
    proc = subprocess.run([str(facet_bin), cmd, "--help"], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, (cmd, proc.stderr)
    assert proc.stdout.startswith("usage: facet " + cmd), (cmd, proc.stdout[:200])
    return proc.stdout


def help_options(facet_bin, cmd):
    """The options of `facet CMD --help`'s usage block (its first line and the indented
    lines after it), after checking that every option the rest of the help describes (a
    line starting with an option) or its example uses is in that block."""
    lines = help_text(facet_bin, cmd).splitlines()
    n = 1
    while n < len(lines) and lines[n][:1].isspace() and lines[n].strip():
        n += 1
    usage = options("\n".join(lines[:n]))
    described = set()
    for line in lines[n:]:
        m = re.match(r"\s*(--?[A-Za-z][\w-]*)", line)
        if m:
            described.add(m.group(1))
        if line.startswith("example: "):
            described |= options(line)
    described -= {"-h", "--help"}
    assert described <= usage, "facet %s --help describes %s, its usage lines do not name" \
        % (cmd, sorted(described - usage))
    return usage


def doc_synopses(path):
    """{command: [synopsis text, ...]} from the fenced blocks of a Markdown file."""
    found = {}
    for block in FENCE.findall(path.read_text(encoding="utf-8")):
        current = None
        for line in block.splitlines():
            m = SYNOPSIS.match(line)
            if m:
                current = [line]
                found.setdefault(m.group(1), []).append(current)
            elif current is not None and line[:1].isspace() and line.strip():
                current.append(line)
            else:
                current = None
    return {cmd: ["\n".join(lines) for lines in texts] for cmd, texts in found.items()}


@pytest.mark.parametrize("doc", ["README.md", "DESIGN.md"])
def test_doc_synopsis_matches_help(facet_bin, doc):
    synopses = doc_synopses(REPO / doc)
    problems = []
    for cmd in commands(facet_bin):
        if cmd not in synopses:
            problems.append("%s: no fenced synopsis line 'facet %s ...'" % (doc, cmd))
            continue
        want = help_options(facet_bin, cmd)
        have = set().union(*(options(s) for s in synopses[cmd]))
        if want - have:
            problems.append("%s: facet %s: --help names %s, the synopsis does not"
                            % (doc, cmd, sorted(want - have)))
        if have - want:
            problems.append("%s: facet %s: the synopsis names %s, --help does not"
                            % (doc, cmd, sorted(have - want)))
    assert not problems, "\n".join(problems)


def test_synopsis_parser_sees_drift():
    """The checker itself: an option missing from a synopsis is seen, options inside
    words and arrows are not taken for options."""
    text = "```\nfacet run [MODEL] [-p TEXT | -f FILE|-] [--top-k K]\n" \
           "          [--stop STR]...   -> text, top-k min-p\nnot facet\n```\n"
    path = REPO / "build" / "synopsis_selftest.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    try:
        syn = doc_synopses(path)
    finally:
        path.unlink()
    assert options(syn["run"][0]) == {"-p", "-f", "--top-k", "--stop"}
    assert options("usage: facet run [-n N] [--seed S]") - options(syn["run"][0]) == \
        {"-n", "--seed"}


def example(facet_bin, cmd):
    lines = help_text(facet_bin, cmd).rstrip("\n").splitlines()
    last = lines[-1]
    assert last.startswith("example: facet %s" % cmd), \
        "facet %s --help does not end with 'example: facet %s ...': %r" % (cmd, cmd, last)
    argv = shlex.split(last[len("example: "):])
    return [str(facet_bin)] + argv[1:]


def test_every_help_ends_with_an_example(facet_bin):
    for cmd in commands(facet_bin):
        example(facet_bin, cmd)


@pytest.mark.parametrize("cmd", ["run", "tokenize", "detokenize", "template", "conform",
                                 "onboard", "plan", "bench", "chat"])
def test_help_example_runs(facet_bin, cmd):
    argv = example(facet_bin, cmd)
    # chat reads its turns from standard input: one turn, then end of input (Ctrl-D)
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300,
                          input="Once upon a time\n" if cmd == "chat" else None,
                          env=dict(os.environ, FACET_NO_CACHE="1"))
    assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.stdout.strip(), argv


def test_help_example_serve(facet_bin):
    """serve's example starts a server: it must come up and answer /health (on any free
    port instead of the example's, so parallel test runs do not collide)."""
    argv = example(facet_bin, "serve")
    if "--port" in argv:
        argv[argv.index("--port") + 1] = "0"
    else:
        argv += ["--port", "0"]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, FACET_NO_CACHE="1"))
    try:
        url, seen = None, []
        for line in proc.stderr:  # ends when the server exits
            seen.append(line)
            m = re.search(r"listening on (http://[0-9.]+:[0-9]+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "serve example did not start: " + "".join(seen)[-2000:]
        with urllib.request.urlopen(url + "/health", timeout=30) as r:
            assert r.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()
