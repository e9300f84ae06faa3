"""Real clients over real sockets: redis-py (with hiredis) and redis-cli."""
import subprocess

import redis


def test_redis_py_hiredis(skein_server):
    assert redis.utils.HIREDIS_AVAILABLE
    r = redis.Redis(port=skein_server.port)
    r.flushall()
    assert r.ping()
    assert r.set("py:k", "v")
    assert r.get("py:k") == b"v"
    assert r.incr("py:n", 5) == 5
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.set("py:p%d" % i, i)
    p.mget(["py:p0", "py:p999"])
    out = p.execute()
    assert out[-1] == [b"0", b"999"]
    assert r.dbsize() == 1002
    r.close()


def test_redis_py_resp3(skein_server):
    r = redis.Redis(port=skein_server.port, protocol=3)
    assert r.set("py3:k", "v")
    assert r.get("py3:k") == b"v"
    r.close()


def test_redis_cli_basic(skein_server):
    def cli(*args):
        return subprocess.run(["redis-cli", "-p", str(skein_server.port)] + list(args),
                              capture_output=True, text=True, timeout=30).stdout

    assert cli("ping").strip() == "PONG"
    assert cli("set", "cli:k", "hello").strip() == "OK"
    assert cli("get", "cli:k").strip() == "hello"


def test_redis_cli_pipe_mass_insert(skein_server):
    lines = "".join("SET pipe:%d %d\r\n" % (i, i) for i in range(10000))
    out = subprocess.run(["redis-cli", "-p", str(skein_server.port), "--pipe"],
                         input=lines, capture_output=True, text=True, timeout=60)
    assert "errors: 0, replies: 10000" in out.stdout, out.stdout
    r = redis.Redis(port=skein_server.port)
    assert r.get("pipe:9999") == b"9999"
    r.close()


def test_redis_cli_scan(skein_server):
    r = redis.Redis(port=skein_server.port)
    r.select(0)
    keys = {"scan:%d" % i for i in range(2500)}
    p = r.pipeline(transaction=False)
    for k in keys:
        p.set(k, 1)
    p.execute()
    out = subprocess.run(["redis-cli", "-p", str(skein_server.port), "--scan", "--pattern", "scan:*"],
                         capture_output=True, text=True, timeout=60).stdout.split()
    assert len(out) == len(keys)
    assert set(out) == keys
    r.close()


def test_redis_benchmark_default_tests(skein_server):
    """redis-benchmark's default tests that Skein covers run without errors."""
    out = subprocess.run(
        ["redis-benchmark", "-p", str(skein_server.port), "-n", "2000", "-c", "10", "-q",
         "-t", "ping_inline,ping_mbulk,set,get,incr,mset", "-r", "1000"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for test in ("PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET"):
        assert test in out.stdout, out.stdout
    assert "error" not in out.stdout.lower() and "error" not in out.stderr.lower(), out.stdout + out.stderr
    # Pipelined as well.
    out = subprocess.run(
        ["redis-benchmark", "-p", str(skein_server.port), "-n", "20000", "-c", "20", "-P", "16",
         "-q", "-t", "set,get", "-r", "1000", "-d", "64"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "GET" in out.stdout, out.stdout + out.stderr
