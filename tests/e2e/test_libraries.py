"""The libraries facet is built from (issue 16): libfacet, the engine, and facetserver,
the HTTP server over it, linked into the CLI. Neither prints nor touches the process's
signals: the CLI owns stdout, stderr and signals (the server reports through a log
callback), so an embedding program keeps control of its own. Checked on the objects'
undefined symbols (binutils' nm)."""

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("FACET_BIN", str(REPO / "build" / "facet"))).parent

# printing to the process's streams, and signal handling (report.c writes to a FILE its
# caller passes, so fprintf/fwrite alone are not printing)
FORBIDDEN = {"stdout", "stderr", "printf", "puts", "putchar", "perror", "vprintf",
             "signal", "sigaction", "sigprocmask", "pthread_sigmask", "sigwait", "raise",
             "exit", "abort"}


def undefined(lib):
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) is not installed")
    if not lib.exists():
        pytest.skip("%s not built" % lib)
    out = subprocess.run(["nm", "-A", "-u", str(lib)], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[-2] == "U":
            syms.setdefault(parts[-1].split("@")[0], []).append(parts[0])
    return syms


@pytest.mark.parametrize("name", ["libfacet.a", "libfacetserver.a"])
def test_libraries_print_nothing_and_leave_signals_alone(name):
    syms = undefined(BUILD / name)
    bad = {s: where for s, where in syms.items() if s in FORBIDDEN}
    assert not bad, bad


def test_engine_library_has_no_http():
    """libmicrohttpd is the server's dependency, not the engine's."""
    syms = undefined(BUILD / "libfacet.a")
    assert not [s for s in syms if s.startswith("MHD_")]
    assert [s for s in undefined(BUILD / "libfacetserver.a") if s.startswith("MHD_")]
