"""The connection layer (issue 20, thousands of connections): the open-file limit the
server sets itself (Redis's adjustOpenFilesLimit and its log lines), pipelines kept in
order across many connections, per-connection buffers given back when idle. Compared with
redis-server 7.0.15 where its behaviour is deterministic."""
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import SKEIN_BIN, free_port, wait_port
from resp_client import RawConn

FD_LINES = re.compile(rb"[#*] (.*(?:open files|file descriptors|maxclients has been|ulimit -n).*)")


def run_limited(kind, nofile, drop_cap):
    """Start a server under `prlimit --nofile=SOFT:HARD` (optionally without
    CAP_SYS_RESOURCE, so it cannot raise the hard limit); return (its log lines about the
    limit, CONFIG GET maxclients or None if it did not start)."""
    port = free_port()
    d = tempfile.mkdtemp(prefix="skein-fd-")
    server = ["redis-server", "--appendonly", "no"] if kind == "redis" else [SKEIN_BIN]
    cmd = ["prlimit", "--nofile=%d:%d" % nofile]
    if drop_cap:
        cmd += ["setpriv", "--bounding-set=-sys_resource", "--inh-caps=-sys_resource", "--"]
    cmd += server + ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", d]
    log_path = os.path.join(d, "log")
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    maxclients = None
    try:
        try:
            wait_port(port, p)
            c = RawConn(port)
            maxclients = c.call("CONFIG", "GET", "maxclients")
            c.close()
        except RuntimeError:
            pass
    finally:
        if p.poll() is None:
            p.terminate()
        p.wait(timeout=10)
        with open(log_path, "rb") as f:
            lines = FD_LINES.findall(f.read())
        shutil.rmtree(d, ignore_errors=True)
    return lines, maxclients


needs_tools = pytest.mark.skipif(
    not (shutil.which("prlimit") and shutil.which("setpriv")), reason="prlimit/setpriv")


@needs_tools
@pytest.mark.parametrize("nofile,drop_cap", [
    ((1024, 20000), False),   # raised: the notice
    ((256, 256), True),       # refused: maxclients lowered, three warnings
    ((20, 20), True),         # too low to start
])
def test_open_file_limit_as_redis(nofile, drop_cap):
    redis = run_limited("redis", nofile, drop_cap)
    skein = run_limited("skein", nofile, drop_cap)
    assert redis[0], "redis logged nothing about the limit"
    assert skein == redis
