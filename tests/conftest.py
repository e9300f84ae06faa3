"""Fixtures: a reference redis-server 7.0.15 and a skein-server, each on a free loopback
port, stopped by PID when the session ends (pass or fail).

SKEIN_TEST_AGAINST_REDIS=1 makes every "skein" fixture (skein_server, fresh_skein) start
a second redis-server instead (its --workers argument is dropped), so a test can be
checked against Redis on both sides before Skein implements what it covers. Tests that
only make sense for Skein can look at AGAINST_REDIS to skip themselves.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKEIN_BIN = os.environ.get("SKEIN_BIN", os.path.join(ROOT, "target", "debug", "skein-server"))
AGAINST_REDIS = os.environ.get("SKEIN_TEST_AGAINST_REDIS", "") not in ("", "0")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def stop_proc(p):
    """SIGTERM, then SIGKILL if it has not exited within 10 s: never left running."""
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()

def wait_port(port, proc, timeout=15):
    """Wait until the server accepts connections. The probe says QUIT and reads until the
    server closes it, so that the server no longer counts it as a client (INFO clients,
    CLIENT LIST) once this returns."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
        except OSError:
            time.sleep(0.05)
            continue
        with s:
            try:
                s.sendall(b"QUIT\r\n")
                s.settimeout(5)
                while s.recv(256):
                    pass
            except OSError:
                pass
        return
    raise RuntimeError("server did not listen on %d" % port)


class ServerProc:
    """A server process on a loopback port."""

    def __init__(self, kind, extra=(), workers=None):
        if kind == "skein" and AGAINST_REDIS:
            kind, workers = "redis", None
        self.kind = kind
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="skein-test-")
        if kind == "redis":
            cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", self.dir,
                   "--enable-debug-command", "yes"]
        else:
            cmd = [SKEIN_BIN, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--dir", self.dir, "--enable-debug-command", "yes"]
            if workers:
                cmd += ["--workers", str(workers)]
        cmd += list(extra)
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_port(self.port, self.proc)
        except Exception:
            self.stop()
            raise

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server():
    s = ServerProc("redis")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def skein_server():
    s = ServerProc("skein", workers=2)
    yield s
    s.stop()


@pytest.fixture
def fresh_skein():
    """A skein-server of its own, for tests that change server-wide state."""
    servers = []

    def start(extra=(), workers=2):
        s = ServerProc("skein", extra=extra, workers=workers)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def fresh_redis():
    servers = []

    def start(extra=()):
        s = ServerProc("redis", extra=extra)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()
