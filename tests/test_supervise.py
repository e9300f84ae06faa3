"""How the process lives under its operator, against redis-server 7.0.15 started the same
way: `daemonize yes` (the parent exits, the daemon writes its pid file and serves),
`supervised systemd` (the notifications systemd reads on NOTIFY_SOCKET), `oom-score-adj`
(/proc/PID/oom_score_adj at start, after CONFIG SET and after REPLICAOF) and
`replica-serve-stale-data no` (MASTERDOWN while the link is down)."""
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import SKEIN_BIN, free_port, stop_proc, wait_port
from resp_client import RawConn, parse

BINARIES = {"redis": "redis-server", "skein": SKEIN_BIN}


class Detached:
    """A process that is not our child (a daemon): wait_port's `proc`."""

    def poll(self):
        return None


def wait_for(pred, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


def stop_pid(pid):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    wait_for(lambda: not os.path.exists("/proc/%d" % pid), 10)
    if os.path.exists("/proc/%d" % pid):
        os.kill(pid, signal.SIGKILL)


def test_daemonize_writes_the_pid_file_and_serves(tmp_path):
    for kind, binary in BINARIES.items():
        d = tmp_path / kind
        d.mkdir()
        port = free_port()
        pidfile = d / "s.pid"
        r = subprocess.run([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--dir", str(d), "--daemonize", "yes", "--pidfile", str(pidfile),
                            "--logfile", str(d / "log")], timeout=20)
        assert r.returncode == 0, kind
        assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip()), kind
        pid = int(pidfile.read_text())
        try:
            assert os.path.exists("/proc/%d" % pid), kind
            wait_port(port, Detached())
            assert RawConn(port).call("PING") == b"+PONG\r\n", kind
            # The daemon is in a session of its own.
            assert os.getsid(pid) == pid, kind
        finally:
            stop_pid(pid)
        assert wait_for(lambda: not pidfile.exists()), kind


def notifications(binary, tmp_path, name):
    path = str(tmp_path / ("notify-" + name))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(10)
    port = free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path)
    log = open(tmp_path / ("log-" + name), "w")
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--dir", str(tmp_path), "--supervised", "systemd",
                          "--daemonize", "yes"], env=env, stdout=log, stderr=subprocess.STDOUT)
    got = []
    try:
        wait_port(port, p)
        while b"READY=1\n" not in got:
            got.append(sock.recv(4096))
        # Supervised, it stays in the foreground despite `daemonize yes`.
        assert p.poll() is None
        p.terminate()
        while b"STOPPING=1\n" not in got:
            got.append(sock.recv(4096))
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        sock.close()
        log.close()
    return got


def test_supervised_systemd_notifications(tmp_path):
    want = notifications("redis-server", tmp_path, "redis")
    got = notifications(SKEIN_BIN, tmp_path, "skein")
    assert got == want
    assert want[-2:] == [b"READY=1\n", b"STOPPING=1\n"]


def oom(pid):
    return int(open("/proc/%d/oom_score_adj" % pid).read())


def test_oom_score_adj(tmp_path):
    base = oom(os.getpid())
    seen = {}
    for kind, binary in BINARIES.items():
        port = free_port()
        p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--dir", str(tmp_path), "--oom-score-adj", "yes",
                              "--oom-score-adj-values", "5 200 800"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        vals = []
        try:
            wait_port(port, p)
            c = RawConn(port)
            vals.append(wait_for(lambda: oom(p.pid) == base + 5 and oom(p.pid)))
            c.call("CONFIG", "SET", "oom-score-adj", "absolute", "oom-score-adj-values", "10 20 30")
            vals.append(oom(p.pid))
            c.call("REPLICAOF", "127.0.0.1", str(free_port()))
            vals.append(wait_for(lambda: oom(p.pid) == 20 and oom(p.pid)))
            vals.append(parse(c.call("CONFIG", "SET", "oom-score-adj-values", "1 2 3")))
            vals.append(oom(p.pid))
            c.call("REPLICAOF", "NO", "ONE")
            vals.append(wait_for(lambda: oom(p.pid) == 1 and oom(p.pid)))
            c.call("CONFIG", "SET", "oom-score-adj", "no")
            vals.append(oom(p.pid))
        finally:
            stop_proc(p)
        seen[kind] = vals
    assert seen["skein"] == seen["redis"]
    assert seen["redis"][-1] == base


def test_replica_serve_stale_data_no(fresh_redis, fresh_skein):
    dead = free_port()
    outs = []
    for start in (fresh_redis, fresh_skein):
        srv = start(["--replicaof", "127.0.0.1", str(dead), "--replica-serve-stale-data", "no"])
        c = RawConn(srv.port)
        got = [parse(c.call(*cmd)) for cmd in (["GET", "k"], ["SET", "k", "v"], ["PING"],
                                                 ["DBSIZE"], ["ROLE"], ["CONFIG", "GET", "port"],
                                                 ["MULTI"], ["GET", "k"], ["EXEC"])]
        got[4] = got[4][0]
        got[5] = len(got[5])
        c.call("CONFIG", "SET", "replica-serve-stale-data", "yes")
        got.append(parse(c.call("GET", "k")))
        outs.append(got)
    assert outs[0] == outs[1]
    assert outs[0][0] == ("err", "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")


def test_loglevel_filters_the_log(tmp_path):
    """`loglevel warning` keeps notice lines (`*`) out of the log, as Redis does, and
    CONFIG SET loglevel notice lets them in again (SAVE's "DB saved on disk")."""
    levels = {}
    for kind, binary in BINARIES.items():
        log = tmp_path / (kind + ".log")
        port = free_port()
        p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--dir", str(tmp_path), "--loglevel", "warning",
                              "--logfile", str(log)])
        try:
            wait_port(port, p)
            c = RawConn(port)
            before = set(line.split(" ")[5] for line in log.read_text().splitlines() if line)
            c.call("CONFIG", "SET", "loglevel", "notice")
            c.call("SAVE")
            wait_for(lambda: " * " in log.read_text())
            after = " * " in log.read_text()
        finally:
            stop_proc(p)
        levels[kind] = (before - {"#"}, after)
    assert levels["skein"] == levels["redis"] == (set(), True)
