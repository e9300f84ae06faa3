"""Configuration against redis-server 7.0.15: CONFIG GET of every option, start-up from
files / includes / stdin / `--name value`, Redis's fatal config errors (stderr and exit
code, line numbers included), CONFIG REWRITE, --version and --help."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import SKEIN_BIN, ServerProc, free_port, wait_port
from resp_client import RawConn, parse

# Options whose value is a property of the instance, compared by rule below.
INSTANCE = {"port", "dir"}
# Skein's own options.
SKEIN_ONLY = {"workers", "shards-per-db", "metrics-port", "metrics-bind",
              "offload-threshold", "offload-threads", "offload-nice"}
# Options CONFIG GET shows only for their exact name.
HIDDEN = ["use-exit-on-panic", "rdb-key-save-delay", "key-load-delay", "watchdog-period",
          "loading-process-events-interval-bytes"]
BINARIES = {"redis": "redis-server", "skein": SKEIN_BIN}


def config_map(conn, *patterns):
    reply = parse(conn.call("CONFIG", "GET", *patterns))
    if reply and isinstance(reply[0], tuple):
        return dict(reply)
    return dict(zip(reply[::2], reply[1::2]))


class Started(ServerProc):
    """A server started with an exact argv in its own directory (removed when it stops)."""

    def __init__(self, kind, args, cwd=None, stdin_text=None):
        self.kind = kind
        self.port = free_port()
        self.dir = cwd or tempfile.mkdtemp(prefix="skein-cfg-")
        argv = [BINARIES[kind]] + [a.replace("{port}", str(self.port)) for a in args]
        self.log = open(os.path.join(self.dir, "%s.log" % kind), "w")
        self.proc = subprocess.Popen(argv, cwd=self.dir, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.PIPE if stdin_text is not None else None)
        if stdin_text is not None:
            self.proc.stdin.write(stdin_text.encode())
            self.proc.stdin.close()
        try:
            wait_port(self.port, self.proc)
        except Exception:
            self.stop()
            raise

    def conn(self):
        return RawConn(self.port)


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="skein-cfg-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def started():
    servers = []

    def start(kind, args, cwd=None, stdin_text=None):
        s = Started(kind, args, cwd, stdin_text)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.mark.parametrize("proto", [2, 3])
def test_config_get_every_option(proto, fresh_redis, fresh_skein):
    extra = ["--save", "", "--appendonly", "no"]
    r, s = fresh_redis(extra), fresh_skein(extra)
    rc, sc = RawConn(r.port), RawConn(s.port)
    if proto == 3:
        rc.call("HELLO", "3")
        sc.call("HELLO", "3")
    ra, sa = config_map(rc, "*"), config_map(sc, "*")
    names = {k.decode() for k in ra}
    assert len(names) > 180
    assert {k.decode() for k in sa} - names == SKEIN_ONLY
    for name in sorted(names) + HIDDEN:
        a = rc.call("CONFIG", "GET", name)
        b = sc.call("CONFIG", "GET", name)
        if name in INSTANCE:
            assert a[:1] == b[:1], name
            continue
        assert a == b, "%s\n  redis: %r\n  skein: %r" % (name, a, b)
    # Instance properties, by rule: each server reports its own port and directory.
    assert sa[b"port"] == str(s.port).encode() and ra[b"port"] == str(r.port).encode()
    assert os.path.realpath(sa[b"dir"].decode()) == os.path.realpath(s.dir)
    assert os.path.realpath(ra[b"dir"].decode()) == os.path.realpath(r.dir)
    rc.close()
    sc.close()


CONF = """# a comment
maxmemory 100MB
save 900 1
save 300 10
slave-priority 50
notify-keyspace-events "Ex"
client-output-buffer-limit pubsub 64mb 16mb 90
list-max-ziplist-entries 5
include inc/one.conf
"""
INC_ONE = "hz 20\ninclude inc/two.conf\n"
INC_TWO = "maxmemory-policy allkeys-lru\n  timeout   7  \n"
COMPARED = ["maxmemory", "save", "replica-priority", "notify-keyspace-events",
            "client-output-buffer-limit", "hz", "maxmemory-policy", "timeout", "loglevel",
            "databases", "bind", "unixsocketperm", "tcp-keepalive", "proto-max-bulk-len"]


def write_conf(d, text=CONF):
    os.makedirs(os.path.join(d, "inc"), exist_ok=True)
    with open(os.path.join(d, "inc", "one.conf"), "w") as f:
        f.write(INC_ONE)
    with open(os.path.join(d, "inc", "two.conf"), "w") as f:
        f.write(INC_TWO)
    with open(os.path.join(d, "r.conf"), "w") as f:
        f.write(text)


def values(server):
    c = server.conn()
    out = {n: c.call("CONFIG", "GET", n) for n in COMPARED}
    c.close()
    return out


def test_start_from_file_includes_and_overrides(started):
    """Relative includes (from the current directory), units in any case, quoting,
    multi-argument options, and --name value overrides after the file."""
    got = {}
    for kind in ("redis", "skein"):
        d = tempfile.mkdtemp(prefix="skein-cfg-")
        write_conf(d)
        s = started(kind, ["r.conf", "--port", "{port}", "--bind", "127.0.0.1",
                           "--loglevel", "warning", "--databases", "4",
                           "--proto-max-bulk-len", "2Gb"], cwd=d)
        got[kind] = values(s)
        s.stop()
    assert got["redis"] == got["skein"]


def test_start_from_stdin_and_save_flag(started):
    got = {}
    for kind in ("redis", "skein"):
        s = started(kind, ["--port", "{port}", "--bind", "127.0.0.1", "--save", "-"],
                    stdin_text="maxmemory 1gb\nhz 15\nsave 60 5\n")
        got[kind] = values(s)
        s.stop()
    assert got["redis"] == got["skein"]
    # "--save" right before "-" has no value: it adds nothing to stdin's save line.
    assert got["skein"]["save"] == b"*2\r\n$4\r\nsave\r\n$4\r\n60 5\r\n"


def run_both(args, cwd, stdin_text=None):
    out = {}
    for kind, binary in BINARIES.items():
        p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, timeout=20,
                           input=(stdin_text or "").encode())
        out[kind] = (p.returncode, p.stderr.decode(errors="replace"))
    return out


BAD_ARGS = [
    ["--maxmemory", "foo"],
    ["--port", "0", "--hz"],
    ["--hz", "--port", "0"],
    ["--save", "1"],
    ["--port", "1", "2"],
    ["--bogus-option", "1"],
    ["--loglevel", "loud"],
    ["--maxmemory-clients", "200%"],
    ["--unixsocketperm", "999"],
    ["--client-output-buffer-limit", "normal 1 2"],
    ["--client-output-buffer-limit", "master 1 2 3"],
    ["--oom-score-adj-values", "1 2"],
    ["--notify-keyspace-events", "Q"],
    ["--replicaof", "a b c"],
    ["--replicaof", "host", "70000"],
    ["--latency-tracking-info-percentiles", "200"],
    ["--shutdown-on-sigterm", "save nosave"],
    ["--dbfilename", "a/b"],
    ["--appendfilename", ""],
    ["--activedefrag", "yes"],
    ["--cluster-announce-hostname", "a_b"],
    ["--dir", "/nonexistent-skein-dir"],
    ["--logfile", "/nonexistent-skein-dir/x.log"],
    ["--module.option"],
    ["--port", "0", "--bind", "127.0.0.1", "--databases", "0"],
]


@pytest.mark.parametrize("args", BAD_ARGS, ids=[" ".join(a) for a in BAD_ARGS])
def test_fatal_errors_from_arguments(args, workdir):
    out = run_both(args, workdir)
    assert out["redis"][0] == 1
    assert out["skein"] == out["redis"]


BAD_FILES = [
    "port 6379\n\n# comment\nmaxmemory 5x\n",
    "\n\n   bogus   1\n",
    'requirepass "unbalanced\n',
    "requirepass \"a\"b\n",
    "hz 10 20\n",
    "save 60\n",
    "include\n",
    "include inc/one.conf\ninclude inc/bad.conf\n",
    "include inc/nested.conf\n",
    "timeout -1\r\n",
    "sentinel monitor x\n",
]


@pytest.mark.parametrize("text", BAD_FILES, ids=[t.split("\n")[0] or "blank" for t in BAD_FILES])
def test_fatal_errors_from_files(text, workdir):
    write_conf(workdir, text)
    with open(os.path.join(workdir, "inc", "bad.conf"), "w") as f:
        f.write("# bad\nmaxmemory-policy lru\n")
    with open(os.path.join(workdir, "inc", "nested.conf"), "w") as f:
        f.write("hz 5\ninclude inc/bad.conf\n")
    for extra in ([], ["--port", "0", "--hz", "11"]):
        out = run_both(["r.conf"] + extra, workdir)
        assert out["redis"][0] == 1
        assert out["skein"] == out["redis"]
    # The same text from stdin, then a bad option: line numbers continue after stdin.
    out = run_both(["-", "--port", "0", "--hz", "x"], workdir, stdin_text="hz 5\n")
    assert out["skein"] == out["redis"]


def test_missing_config_file(workdir):
    out = {}
    for kind, binary in BINARIES.items():
        p = subprocess.run([binary, "nosuch.conf"], cwd=workdir, capture_output=True,
                           timeout=20)
        out[kind] = p.returncode, p.stdout.decode()
    assert out["redis"][0] == out["skein"][0] == 1
    msg = "Fatal error, can't open config file '%s/nosuch.conf': No such file or directory" % (
        workdir)
    assert msg in out["redis"][1] and msg in out["skein"][1]


def test_version_and_help(workdir):
    v = subprocess.run([SKEIN_BIN, "--version"], capture_output=True, timeout=20)
    assert v.returncode == 0 and b" v=7.0.15 " in v.stdout
    for flag in ("--help", "-h"):
        r = subprocess.run(["redis-server", flag], capture_output=True, timeout=20)
        s = subprocess.run([SKEIN_BIN, flag], capture_output=True, timeout=20)
        assert r.returncode == s.returncode == 1
        assert s.stderr.startswith(b"Usage: ./skein-server [/path/to/redis.conf] [options] [-]\n")


REWRITE_CONF = """# Top comment, kept
port 6379
bind 127.0.0.1
save 900 1
save 300 10

maxmemory 1mb
slave-priority 50
hz 10
hz 11
list-max-ziplist-entries 5
  # indented comment
"""
REWRITE_SETS = [
    ("maxmemory", "2mb"), ("timeout", "5"), ("notify-keyspace-events", "Kx"),
    ("masterauth", 'a b"c'), ("maxmemory-clients", "5%"), ("hz", "10"),
    ("client-output-buffer-limit", "normal 1mb 0 0"), ("save", "100 1"),
    ("loglevel", "warning"), ("replica-priority", "100"), ("maxmemory-policy", "allkeys-lru"),
    ("latency-tracking-info-percentiles", "1.5 99"), ("shutdown-on-sigint", "nosave now"),
    ("lfu-log-factor", "10"), ("proto-max-bulk-len", "3000kb"),
    ("oom-score-adj-values", "0 100 800"), ("requirepass", "secret"),
]


def split_rewrite(text, port, d):
    """(lines before the signature, set of lines after it), instance lines normalized."""
    lines = []
    for line in text.split("\n"):
        line = line.replace("port %d" % port, "port N").replace('dir "%s"' % d, 'dir "D"')
        lines.append(line)
    sig = "# Generated by CONFIG REWRITE"
    if sig in lines:
        i = lines.index(sig)
        return lines[:i], sorted(lines[i + 1:])
    return lines, []


def test_config_rewrite(started):
    got = {}
    for kind in ("redis", "skein"):
        d = os.path.realpath(tempfile.mkdtemp(prefix="skein-cfg-"))
        with open(os.path.join(d, "r.conf"), "w") as f:
            f.write(REWRITE_CONF)
        s = started(kind, ["r.conf", "--port", "{port}", "--unixsocket", "s.sock"], cwd=d)
        c = s.conn()
        for name, value in REWRITE_SETS:
            assert c.call("CONFIG", "SET", name, value) == b"+OK\r\n", name
        c.call("AUTH", "secret")
        assert c.call("CONFIG", "REWRITE") == b"+OK\r\n"
        with open(os.path.join(d, "r.conf")) as f:
            text = f.read()
        got[kind] = split_rewrite(text, s.port, d)
        c.close()
        s.stop()
        # The rewritten file loads back to the same values (dir line pointing elsewhere).
        d2 = os.path.realpath(tempfile.mkdtemp(prefix="skein-cfg-"))
        with open(os.path.join(d2, "r.conf"), "w") as f:
            f.write(text.replace('dir "%s"' % d, 'dir "%s"' % d2))
        s2 = started(kind, ["r.conf", "--port", "{port}"], cwd=d2)
        c = s2.conn()
        c.call("AUTH", "secret")
        reload = {n: c.call("CONFIG", "GET", n) for n, _ in REWRITE_SETS}
        got[kind + "-reload"] = reload
        c.close()
        s2.stop()
    assert got["skein"][0] == got["redis"][0]
    assert got["skein"][1] == got["redis"][1]
    assert got["skein-reload"] == got["redis-reload"]


def test_config_rewrite_without_file(skein_server):
    c = RawConn(skein_server.port)
    assert c.call("CONFIG", "REWRITE") == b"-ERR The server is running without a config file\r\n"
    c.close()


def test_hot_values_follow_config_set(fresh_skein):
    """proto-max-bulk-len is read from an atomic on the request path: CONFIG SET must
    update it at once."""
    s = fresh_skein()
    c = RawConn(s.port)
    assert c.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == b"+OK\r\n"
    big = b"x" * (1024 * 1024 + 1)
    c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % len(big))
    assert c.read_reply().startswith(b"-ERR Protocol error: invalid bulk length")
    c.close()
    c = RawConn(s.port)
    assert c.call("CONFIG", "SET", "proto-max-bulk-len", "2mb") == b"+OK\r\n"
    assert c.call("SET", "k", big) == b"+OK\r\n"
    c.close()


def test_protected_dir_when_enabled(fresh_redis, fresh_skein):
    """With enable-protected-configs, CONFIG SET dir changes the working directory; a bad
    directory gets Redis's error and changes nothing."""
    extra = ["--enable-protected-configs", "yes"]
    replies = {}
    for kind, start in (("redis", fresh_redis), ("skein", fresh_skein)):
        s = start(extra)
        os.makedirs(os.path.join(s.dir, "sub"))
        c = RawConn(s.port)
        got = [c.call("CONFIG", "SET", "dir", "sub"),
               c.call("CONFIG", "SET", "dir", "/nonexistent-skein-dir"),
               c.call("CONFIG", "SET", "dbfilename", "x.rdb"),
               c.call("CONFIG", "GET", "dbfilename")]
        d = config_map(c, "dir")[b"dir"].decode()
        assert os.path.realpath(d) == os.path.realpath(os.path.join(s.dir, "sub"))
        c.call("CONFIG", "SET", "dir", s.dir)
        c.close()
        replies[kind] = got
    assert replies["skein"] == replies["redis"]
