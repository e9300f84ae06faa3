"""Linearizability: the Go checker in tests/linearizability (a concurrent GET / SET /
SET..GET / INCR / APPEND / DEL workload on a few keys, with or without a compare-and-set
Lua script run by EVALSHA among them, its history checked by porcupine)
against a fresh skein-server with several workers, and once against redis-server as a
sanity check of the checker itself. The checker's model is unit-tested with `go test`
(legal histories accepted, stale reads and lost increments refused).

`go build` fetches porcupine through the Go module proxy (nothing is vendored).
"""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

SRC = os.path.join(ROOT, "tests", "linearizability")
OUT = os.path.join(ROOT, "target", "linearizability")


def go_binary():
    return shutil.which("go") or next(
        (p for p in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go") if os.access(p, os.X_OK)),
        None)


def go_env():
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-buildvcs=false")
    if not env.get("HOME"):
        env.setdefault("GOPATH", os.path.join(OUT, "gopath"))
        env.setdefault("GOCACHE", os.path.join(OUT, "gocache"))
    return env


def go(*args, timeout=300):
    gobin = go_binary()
    if gobin is None:
        pytest.skip("no Go toolchain (scripts/test.sh installs one)")
    p = subprocess.run([gobin] + list(args), cwd=SRC, env=go_env(), timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, "go %s failed:\n%s" % (" ".join(args), p.stdout)
    return p.stdout


@pytest.fixture(scope="module")
def checker():
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "lincheck")
    go("build", "-o", path, ".")
    return path


def run_checker(checker, port, *extra):
    p = subprocess.run([checker, "-addr", "127.0.0.1:%d" % port, "-clients", "40",
                        "-keys", "8", "-ops", "4000",
                        "-viz", os.path.join(OUT, "history-%d.html" % port)] + list(extra),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=180)
    return p.returncode, p.stdout


def test_model_refuses_illegal_histories():
    out = go("test", "-count=1", ".")
    assert "ok" in out


def test_redis_is_linearizable(checker, redis_server):
    rc, out = run_checker(checker, redis_server.port, "-prefix", "lin:redis:")
    assert rc == 0, out
    rc, out = run_checker(checker, redis_server.port, "-prefix", "lin:rcas:", "-cas", "40")
    assert rc == 0, out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_skein_is_linearizable(checker, fresh_skein, seed):
    server = fresh_skein(workers=4)
    rc, out = run_checker(checker, server.port, "-seed", str(seed))
    assert rc == 0, out
    assert server.alive()


@pytest.mark.parametrize("seed", [1, 2])
def test_skein_compare_and_set_scripts_are_linearizable(checker, fresh_skein, seed):
    """A compare-and-set register: 40% of the operations are a compare-and-set script
    (EVALSHA; half of them right after a GET of the key) racing plain GETs and SETs of
    the same 8 keys from 40 clients spread over 4 workers."""
    server = fresh_skein(workers=4)
    rc, out = run_checker(checker, server.port, "-seed", str(seed), "-cas", "40")
    assert rc == 0, out
    assert server.alive()
