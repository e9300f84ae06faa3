"""A `dir` that cannot be written, against redis-server 7.0.15. The suite runs as root,
where file permissions stop no write, so the directory is on a tmpfs remounted read-only
(skipped where mounting is not allowed). Both servers must give the same replies: SAVE
and BGSAVE fail (INFO rdb_last_bgsave_status:err), `stop-writes-on-bgsave-error yes`
refuses writes and PING with Redis's -MISCONF while reads are served, `no` lets writes
through, turning the AOF on fails, the server stays up; once the directory is writable
again a BGSAVE succeeds and writes come back. Also CONFIG SET dir to a missing path, and
starting with `appendonly yes` on the read-only directory."""
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import free_port, SKEIN_BIN
from test_persistence import client

EXTRA = ["--save", "3600 1", "--enable-protected-configs", "yes"]


def mount(*args):
    return subprocess.run(["mount", *args], capture_output=True, text=True)


@pytest.fixture
def tmpfs():
    """A 4 MB tmpfs, unmounted when the test ends; skipped where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("remounting read-only needs root")
    d = tempfile.mkdtemp(prefix="skein-ro-")
    r = mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", d)
    if r.returncode != 0:
        os.rmdir(d)
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())
    yield d
    subprocess.run(["umount", "-l", d], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


def read_only(d, ro):
    r = mount("-o", "remount," + ("ro" if ro else "rw"), d)
    assert r.returncode == 0, r.stderr


def attempt(r, *cmd):
    try:
        return r.execute_command(*cmd)
    except redis.ResponseError as e:
        return "error: " + str(e)


def bgsave_done(r):
    deadline = time.time() + 20
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        assert time.time() < deadline
        time.sleep(0.05)
    return r.info("persistence")["rdb_last_bgsave_status"]


def outcome(server, mnt):
    sub = os.path.join(mnt, server.kind)
    os.mkdir(sub)
    r = client(server)
    r.config_set("dir", sub)
    r.set("k", "v")
    seen = [attempt(r, "SAVE")]
    read_only(mnt, True)
    try:
        seen += [attempt(r, "SAVE"), attempt(r, "BGSAVE"), bgsave_done(r)]
        seen += [attempt(r, "SET", "a", "1"), attempt(r, "GET", "k"), attempt(r, "PING"),
                 attempt(r, "DEL", "k"), attempt(r, "INCR", "n")]
        r.config_set("stop-writes-on-bgsave-error", "no")
        seen += [attempt(r, "SET", "a", "1"), attempt(r, "PING")]
        r.config_set("stop-writes-on-bgsave-error", "yes")
        seen += [attempt(r, "SET", "a", "2")]
        seen += [attempt(r, "CONFIG", "SET", "appendonly", "yes")]
        info = r.info("persistence")
        seen += [info["aof_enabled"], info["rdb_last_bgsave_status"]]
        seen += [attempt(r, "SET", "a", "3")]
    finally:
        read_only(mnt, False)
    # Writable again: writes stay refused until a background save succeeds.
    seen += [attempt(r, "SET", "a", "4"), attempt(r, "BGSAVE"), bgsave_done(r),
             attempt(r, "SET", "a", "5"), attempt(r, "GET", "a")]
    seen += [attempt(r, "CONFIG", "SET", "dir", os.path.join(mnt, "missing", "x"))]
    seen += [r.config_get("dir")["dir"] == sub, os.path.exists(os.path.join(sub, "dump.rdb"))]
    assert server.alive()
    return seen


def test_read_only_dir_like_redis(tmpfs, fresh_redis, fresh_skein):
    want = outcome(fresh_redis(extra=EXTRA), tmpfs)
    sk = fresh_skein(extra=EXTRA)
    got = outcome(sk, tmpfs)
    assert want[4].startswith("error: MISCONF"), want
    assert want[2] is True and want[3] == "err", want  # "Background saving started"
    assert got == want
    log = open(os.path.join(sk.dir, "server.log")).read()
    assert "Failed opening the temp RDB file temp-" in log
    assert "Read-only file system" in log


def start_outcome(kind, d):
    """Start with `appendonly yes` on a read-only dir: the exit status."""
    port = free_port()
    if kind == "redis":
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    else:
        cmd = [SKEIN_BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    cmd += ["--dir", d, "--appendonly", "yes"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        code = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        code = "still running"
    out = p.stdout.read().decode(errors="replace")
    p.stdout.close()
    return code, out


def test_appendonly_on_read_only_dir_at_start_like_redis(tmpfs):
    read_only(tmpfs, True)
    want, redis_log = start_outcome("redis", tmpfs)
    got, skein_log = start_outcome("skein", tmpfs)
    assert want == 1, redis_log
    assert got == want, skein_log
    assert "Can't open or create append-only dir appendonlydir: Read-only file system" in redis_log
    assert "Can't open or create append-only dir appendonlydir: Read-only file system" in skein_log
