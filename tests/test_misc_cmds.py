"""CLUSTER, READONLY, READWRITE, ASKING, MODULE, LOLWUT, RESTORE-ASKING and MIGRATE against
redis-server 7.0.15 (cluster-enabled no, no module loaded), in RESP2 and RESP3."""
import socket
import threading
import time

import pytest

from difftool import run_script
from resp_client import RawConn, parse

CLUSTER_SCRIPT = r"""
CLUSTER
CLUSTER nosuch
CLUSTER nosuch a b
CLUSTER ADDSLOTS 1
CLUSTER addslots
CLUSTER ADDSLOTSRANGE 1 1
CLUSTER addslotsrange
CLUSTER addslotsrange 1
CLUSTER BUMPEPOCH
CLUSTER bumpepoch 1
CLUSTER COUNT-FAILURE-REPORTS 1
CLUSTER count-failure-reports 1 1
CLUSTER COUNTKEYSINSLOT 1
CLUSTER countkeysinslot 1 1
CLUSTER DELSLOTS 1
CLUSTER delslots
CLUSTER DELSLOTSRANGE 1 1
CLUSTER delslotsrange
CLUSTER FAILOVER
CLUSTER FAILOVER FORCE
CLUSTER FLUSHSLOTS
CLUSTER flushslots 1
CLUSTER FORGET 1
CLUSTER forget 1 1
CLUSTER GETKEYSINSLOT 1 1
CLUSTER getkeysinslot 1 1 1
CLUSTER HELP
CLUSTER help 1
CLUSTER INFO
CLUSTER info 1
CLUSTER KEYSLOT foo
CLUSTER keyslot 1 1
CLUSTER LINKS
CLUSTER links 1
CLUSTER MEET 127.0.0.1 1
CLUSTER meet
CLUSTER MYID
CLUSTER myid 1
CLUSTER NODES
CLUSTER nodes 1
CLUSTER REPLICAS 1
CLUSTER replicas 1 1
CLUSTER REPLICATE 1
CLUSTER replicate 1 1
CLUSTER RESET
CLUSTER RESET HARD
CLUSTER SAVECONFIG
CLUSTER saveconfig 1
CLUSTER SET-CONFIG-EPOCH 1
CLUSTER set-config-epoch 1 1
CLUSTER SETSLOT 1 1
CLUSTER setslot
CLUSTER SHARDS
CLUSTER shards 1
CLUSTER SLAVES 1
CLUSTER slaves 1 1
CLUSTER SLOTS
CLUSTER slots 1
READONLY
READONLY x
READWRITE
READWRITE x
ASKING
ASKING x
MULTI
CLUSTER INFO
READONLY
ASKING
EXEC
"""

MODULE_SCRIPT = r"""
MODULE
MODULE HELP
MODULE help extra
MODULE LIST
MODULE list extra
MODULE nosuch
MODULE UNLOAD
MODULE LOAD
MODULE LOADEX
"""

# Loading needs enable-module-command (a PROTECTED command): see test_module_load.
MODULE_LOAD_SCRIPT = r"""
MODULE LOAD /nonexistent/module.so
MODULE LOAD /nonexistent/module.so arg1 arg2
MODULE LOAD /etc/passwd
MODULE LOADEX /nonexistent/module.so
MODULE LOADEX /nonexistent/module.so CONFIG a b ARGS x y
MODULE LOADEX /nonexistent/module.so CONFIG a
MODULE LOADEX /nonexistent/module.so bogus
MODULE UNLOAD nosuch
MODULE UNLOAD
MODULE UNLOAD a b
MODULE LIST
"""

# Version 5 draws nothing random in its first two rows of squares: byte for byte.
LOLWUT_SCRIPT = r"""
LOLWUT
LOLWUT 10 20
LOLWUT abc
LOLWUT VERSION
LOLWUT version abc
LOLWUT VERSION 1.5
LOLWUT VERSION 99999999999999999999
LOLWUT VERSION 4
LOLWUT VERSION 7
LOLWUT VERSION 0
LOLWUT VERSION -1
LOLWUT VERSION 59
LOLWUT VERSION 5 abc
LOLWUT VERSION 5 10 abc
LOLWUT VERSION 5 10 2 abc
LOLWUT VERSION 6 abc
LOLWUT VERSION 6 10 abc
LOLWUT VERSION 5 66 8 2
LOLWUT VERSION 5 66 8 1
LOLWUT VERSION 5 1 1 1
LOLWUT VERSION 5 2 1 2
LOLWUT VERSION 5 3 3 2
LOLWUT VERSION 5 0 0 0
LOLWUT VERSION 5 -7 -1 -1
LOLWUT VERSION 5 40 3 2 extra args
LOLWUT VERSION 5 1000 200 2
LOLWUT VERSION 5 5000 500 1
LOLWUT VERSION 5 77 7 2
LOLWUT VERSION 5 123 9 2
LOLWUT VERSION 5 31 200 2
LOLWUT VERSION 5 1000 1 1
LOLWUT VERSION 4294967301 20 2 2
@type LOLWUT VERSION 5
@type LOLWUT VERSION 6
@type LOLWUT VERSION 6 1 1
MULTI
LOLWUT VERSION 5 10 2 2
LOLWUT VERSION x
EXEC
"""

INTROSPECTION_SCRIPT = r"""
COMMAND INFO readonly readwrite asking lolwut restore-asking migrate
COMMAND INFO cluster|info cluster|keyslot cluster|setslot cluster|help module|load module|list module|loadex module|unload module|help
COMMAND DOCS readonly readwrite asking lolwut restore-asking migrate
COMMAND DOCS cluster|slots cluster|shards module|loadex
COMMAND GETKEYS migrate 127.0.0.1 6379 k 0 100
COMMAND GETKEYS migrate 127.0.0.1 6379 "" 0 100 COPY KEYS a b c
COMMAND GETKEYSANDFLAGS migrate 127.0.0.1 6379 "" 0 100 KEYS a b
COMMAND GETKEYS restore-asking k 0 payload
COMMAND COUNT
"""


SCRIPTS = {
    "cluster": CLUSTER_SCRIPT,
    "module": MODULE_SCRIPT,
    # LOAD, LOADEX and UNLOAD refused: enable-module-command is off by default.
    "module-protected": MODULE_LOAD_SCRIPT,
    "lolwut": LOLWUT_SCRIPT,
}


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script(redis_server, skein_server, name, proto):
    failures = run_script(SCRIPTS[name], redis_server.port, skein_server.port, proto, name)
    assert not failures, "\n".join(failures)


def test_module_load(fresh_redis, fresh_skein):
    opts = ["--enable-module-command", "yes"]
    r, s = fresh_redis(opts), fresh_skein(opts)
    for proto in (2, 3):
        failures = run_script(MODULE_LOAD_SCRIPT, r.port, s.port, proto, "module-load")
        assert not failures, "\n".join(failures)


@pytest.mark.parametrize("proto", [2, 3])
def test_introspection(redis_server, skein_server, proto):
    script = INTROSPECTION_SCRIPT
    if skein_server.kind == "skein":
        # Skein lacks some commands of Redis's table (see docs/compatibility.md).
        script = script.replace("COMMAND COUNT\n", "")
    failures = run_script(script, redis_server.port, skein_server.port, proto, "introspection")
    assert not failures, "\n".join(failures)


def braille_shape(text):
    """Lines of a version-5 drawing: (characters per line, footer)."""
    body, _, footer = text.decode().rpartition("\nGeorg Nees")
    return [len(line) for line in body.split("\n")], footer


def skyline_shape(text):
    body, _, footer = text.decode().rpartition("\nDedicated")
    cells = []
    for line in body.split("\n"):
        parts = line.split("\x1b[0m")
        assert parts[-1] == ""
        for p in parts[:-1]:
            assert p in ("\x1b[0;30;40m ", "\x1b[0;90;100m ", "\x1b[0;37;47m ",
                         "\x1b[0;97;107m "), p
        cells.append(len(parts) - 1)
    return cells, footer


@pytest.mark.parametrize("args,shape", [
    ((), braille_shape),
    (("30", "4", "6"), braille_shape),
    (("200", "20", "40"), braille_shape),
])
def test_lolwut5_random_rows_have_redis_shape(redis_server, skein_server, args, shape):
    """Below its second row version 5 is random: the same number of lines of the same
    width and the same footer as Redis's."""
    got = [parse(RawConn(s.port).call("LOLWUT", "VERSION", "5", *args))
           for s in (redis_server, skein_server)]
    assert shape(got[0]) == shape(got[1])


@pytest.mark.parametrize("args", [(), ("1", "1"), ("33", "7"), ("200", "50")])
def test_lolwut6_has_redis_shape(redis_server, skein_server, args):
    got = [parse(RawConn(s.port).call("LOLWUT", "VERSION", "6", *args))
           for s in (redis_server, skein_server)]
    assert skyline_shape(got[0]) == skyline_shape(got[1])


@pytest.mark.parametrize("proto", [2, 3])
def test_restore_asking(redis_server, skein_server, proto):
    """RESTORE-ASKING is RESTORE under its own name (a payload from DUMP of a string is
    byte-identical on both servers)."""
    seen = []
    for srv in (redis_server, skein_server):
        c = RawConn(srv.port)
        if proto == 3:
            c.call("HELLO", "3")
        c.call("FLUSHALL")
        c.call("RPUSH", "list", "a", "b", "1")
        c.call("SET", "str", "hello")
        payload = parse(c.call("DUMP", "str"))
        lpayload = parse(c.call("DUMP", "list"))
        steps = [
            ("RESTORE-ASKING", "k", "0", payload),
            ("GET", "k"),
            ("RESTORE-ASKING", "k", "0", payload),
            ("RESTORE-ASKING", "k", "0", payload, "REPLACE"),
            ("RESTORE-ASKING", "k2", "100000", payload, "REPLACE", "IDLETIME", "5"),
            ("TTL", "k2"),
            ("RESTORE-ASKING", "k3", "1", payload, "ABSTTL"),
            ("EXISTS", "k3"),
            ("RESTORE-ASKING", "l2", "0", lpayload),
            ("LRANGE", "l2", "0", "-1"),
            ("RESTORE-ASKING", "k4", "-1", payload),
            ("RESTORE-ASKING", "k4", "0", b"garbage"),
            ("RESTORE-ASKING", "k4", "x", payload),
            ("RESTORE-ASKING", "k4", "0", payload, "FREQ", "300"),
            ("RESTORE-ASKING", "k4", "0", payload, "NOSUCH"),
            ("RESTORE-ASKING", "k4", "0"),
            ("restore-asking",),
            ("OBJECT", "ENCODING", "l2"),
        ]
        seen.append([c.call(*s) for s in steps])
        c.close()
    assert seen[0] == seen[1]


# ---- MIGRATE ----------------------------------------------------------------------------

def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def migrate_steps(dst_port, dead_port):
    """(side, args, how) steps of a MIGRATE session: side "S" runs on the source, "T" on the
    target; `how` turns the reply into what is compared (None: the bytes)."""
    dst = str(dst_port)

    def mig(*rest):
        return ("S", ("MIGRATE", "127.0.0.1", dst) + rest, None)

    def ttl_ok(raw):
        v = parse(raw)
        return isinstance(v, int) and 0 < v <= 100000

    return [
        ("S", ("SET", "k1", "v1"), None),
        ("S", ("RPUSH", "l", "a", "b", "c"), None),
        ("S", ("HSET", "h", "f", "v", "g", "w"), None),
        ("S", ("SET", "t", "x", "PX", "100000"), None),
        ("S", ("ZADD", "z", "1", "a", "2", "b"), None),
        ("S", ("SADD", "s", "m1", "m2"), None),
        mig("k1", "0", "5000"),
        ("S", ("EXISTS", "k1"), None),
        ("T", ("GET", "k1"), None),
        mig("nokey", "0", "5000"),
        mig("", "0", "5000", "KEYS", "nokey", "e"),
        mig("", "5", "5000", "COPY", "KEYS", "l", "h", "t", "nokey"),
        ("S", ("EXISTS", "l", "h", "t"), None),
        ("T", ("SELECT", "5"), None),
        ("T", ("LRANGE", "l", "0", "-1"), None),
        ("T", ("HGETALL", "h"), None),
        ("T", ("PTTL", "t"), ttl_ok),
        ("T", ("OBJECT", "ENCODING", "l"), None),
        # BUSYKEY: the target refuses, nothing is deleted here.
        mig("", "5", "5000", "KEYS", "l", "h"),
        ("S", ("EXISTS", "l", "h"), None),
        mig("", "5", "5000", "REPLACE", "KEYS", "l", "h", "z", "t"),
        ("S", ("EXISTS", "l", "h", "z", "t"), None),
        ("T", ("ZRANGE", "z", "0", "-1", "WITHSCORES"), None),
        ("T", ("PTTL", "t"), ttl_ok),
        # One key refused among others accepted: the accepted ones move.
        ("S", ("SET", "l", "again"), None),
        ("S", ("SET", "fresh", "1"), None),
        mig("", "5", "5000", "KEYS", "fresh", "l"),
        ("S", ("EXISTS", "fresh", "l"), None),
        ("T", ("GET", "fresh"), None),
        # The same database again (the cached connection skips SELECT), then another one.
        ("S", ("SET", "fresh2", "2"), None),
        mig("fresh2", "5", "5000"),
        ("S", ("SET", "fresh3", "3"), None),
        mig("fresh3", "0", "5000"),
        ("T", ("SELECT", "0"), None),
        ("T", ("GET", "fresh3"), None),
        mig("s", "99", "5000"),
        mig("s", "0", "5000"),
        ("S", ("TYPE", "s"), None),
        ("T", ("SMEMBERS", "s"), lambda raw: sorted(parse(raw))),
        # Errors of the command itself.
        ("S", ("SET", "a", "1"), None),
        mig("a", "0", "5000", "KEYS", "b"),
        mig("a", "0", "5000", "BOGUS"),
        mig("a", "0", "5000", "AUTH"),
        mig("a", "0", "5000", "AUTH2", "user"),
        mig("a", "0", "5000", "COPY", "REPLACE", "NOSUCH"),
        mig("a", "0", "soon"),
        mig("a", "db", "5000"),
        mig("a", "db", "soon"),
        mig("a", "0"),
        ("S", ("MIGRATE", "127.0.0.1", str(dead_port), "a", "0", "500"), None),
        ("S", ("MIGRATE", "127.0.0.1", str(dead_port), "nokey", "0", "500"), None),
        ("S", ("MIGRATE", "127.0.0.1", str(dead_port), "a", "0", "500", "COPY"), None),
        ("S", ("MIGRATE", "127.0.0.1", str(dead_port + 65536), "a", "0", "500"), None),
        ("S", ("MIGRATE", "127.0.0.1", "-5", "a", "0", "500"), None),
        ("S", ("MIGRATE", "nosuch.invalid", dst, "a", "0", "500"), None),
        ("S", ("MIGRATE", "256.1.1.1", dst, "a", "0", "500"), None),
        ("S", ("EXISTS", "a"), None),
        # AUTH to a target without a password: its error, though the key moved there.
        mig("a", "0", "5000", "AUTH", "secret"),
        ("S", ("EXISTS", "a"), None),
        ("T", ("EXISTS", "a"), None),
        # Inside a transaction.
        ("S", ("MULTI",), None),
        ("S", ("SET", "m", "1"), None),
        mig("m", "0", "5000", "REPLACE"),
        mig("nokey", "0", "5000"),
        ("S", ("EXEC",), None),
        ("S", ("EXISTS", "m"), None),
        ("T", ("GET", "m"), None),
        ("S", ("INFO", "errorstats"), lambda raw: sorted(
            l.split(b"=")[0] for l in parse(raw).split(b"\r\n") if l.startswith(b"errorstat_"))),
    ]


def run_migrate(src, dst, steps_for, proto=2, password=None):
    """Run a MIGRATE session from server `src` to `dst` (which needs `password`); what each
    step got."""
    s, t = RawConn(src.port), RawConn(dst.port)
    if password:
        t.call("AUTH", password)
    for c in (s, t):
        if proto == 3:
            c.call("HELLO", "3")
    s.call("FLUSHALL")
    s.call("CONFIG", "RESETSTAT")
    t.call("FLUSHALL")
    s.call("SET", "e", "gone", "PX", "1")
    time.sleep(0.01)  # "e" is past its TTL
    got = []
    for side, args, how in steps_for(dst.port, closed_port()):
        raw = (s if side == "S" else t).call(*args)
        got.append((side, args[:1] + args[3:] if args[0] == "MIGRATE" else args,
                    how(raw) if how else raw))
    s.close()
    t.close()
    return got


@pytest.fixture(scope="module")
def migrate_servers():
    """Two redis-servers and two skein-servers of the test's own."""
    from conftest import ServerProc
    servers = {n: ServerProc(k, workers=w) for n, k, w in (
        ("r1", "redis", None), ("r2", "redis", None), ("s1", "skein", 2), ("s2", "skein", 1))}
    yield servers
    for s in servers.values():
        s.stop()


def assert_same_session(ref, got, what):
    diffs = ["%s %r\n  redis->redis: %r\n  %s: %r" % (a[0], a[1], a[2], what, b[2])
             for a, b in zip(ref, got) if a != b]
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("pair", ["s1-r2", "r1-s1", "s1-s2"])
def test_migrate_matches_redis(migrate_servers, pair, proto):
    """MIGRATE Skein -> redis-server, redis-server -> Skein and Skein -> Skein replies and
    moves keys as redis-server -> redis-server does."""
    m = migrate_servers
    ref = run_migrate(m["r1"], m["r2"], migrate_steps, proto)
    src, dst = pair.split("-")
    got = run_migrate(m[src], m[dst], migrate_steps, proto)
    assert len(ref) == len(got)
    assert_same_session(ref, got, pair)


def auth_steps(dst_port, dead_port):
    dst = str(dst_port)

    def mig(*rest):
        return ("S", ("MIGRATE", "127.0.0.1", dst) + rest, None)

    return [
        ("S", ("SET", "a", "1"), None),
        ("S", ("SET", "b", "2"), None),
        mig("a", "0", "5000"),
        mig("a", "0", "5000", "AUTH", "wrong"),
        mig("a", "0", "5000", "AUTH2", "default", "wrong"),
        mig("a", "0", "5000", "AUTH2", "nosuchuser", "pw"),
        ("S", ("EXISTS", "a"), None),
        mig("a", "0", "5000", "AUTH", "pw"),
        ("S", ("EXISTS", "a"), None),
        mig("", "0", "5000", "AUTH2", "default", "pw", "KEYS", "b"),
        ("S", ("EXISTS", "b"), None),
        ("S", ("SET", "c", "3"), None),
        mig("c", "0", "5000", "AUTH", "wrong", "AUTH2", "default", "pw"),
        ("S", ("EXISTS", "c"), None),
        ("T", ("MGET", "a", "b", "c"), None),
    ]


def test_migrate_auth(fresh_redis, fresh_skein, redis_server, skein_server):
    """AUTH and AUTH2 toward targets that need a password."""
    opts = ["--requirepass", "pw"]
    ra, sa = fresh_redis(opts), fresh_skein(opts)
    ref = run_migrate(redis_server, ra, auth_steps, password="pw")
    for src, dst, what in ((skein_server, ra, "skein->redis"), (redis_server, sa, "redis->skein"),
                           (skein_server, sa, "skein->skein")):
        assert_same_session(ref, run_migrate(src, dst, auth_steps, password="pw"), what)


def test_migrate_reconnects_once(migrate_servers):
    """A cached connection the target closed is opened again (Redis retries once)."""
    m = migrate_servers
    seen = []
    for src in ("r1", "s1"):
        s, t = RawConn(m[src].port), RawConn(m["r2"].port)
        s.call("FLUSHALL")
        t.call("FLUSHALL")
        s.call("SET", "x", "1")
        s.call("SET", "y", "2")
        first = s.call("MIGRATE", "127.0.0.1", m["r2"].port, "x", "0", "5000")
        killed = parse(t.call("CLIENT", "KILL", "TYPE", "normal"))
        second = s.call("MIGRATE", "127.0.0.1", m["r2"].port, "y", "0", "5000")
        seen.append((first, killed >= 1, second, t.call("MGET", "x", "y")))
        s.close()
        t.close()
    assert seen[0] == seen[1]


def test_migrate_propagates_del(fresh_skein, redis_server):
    """The propagated form (AOF, replicas) is DEL of the keys moved; nothing for COPY or
    when nothing moved (as Redis's replaceClientCommandVector leaves it)."""
    sk = fresh_skein()
    c, t = RawConn(sk.port), RawConn(redis_server.port)
    t.call("FLUSHALL")
    c.call("MSET", "a", "1", "b", "2", "c", "3")
    c.call("DEBUG", "PROPAGATION", "START")
    port = redis_server.port
    assert c.call("MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS", "a", "b", "nokey") == b"+OK\r\n"
    assert c.call("MIGRATE", "127.0.0.1", port, "c", "0", "5000", "COPY") == b"+OK\r\n"
    assert c.call("MIGRATE", "127.0.0.1", port, "c", "0", "5000").startswith(b"-ERR Target")
    assert c.call("MIGRATE", "127.0.0.1", port, "nokey", "0", "5000") == b"+NOKEY\r\n"
    stream = parse(c.call("DEBUG", "PROPAGATION", "TAKE"))
    assert b"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n" in stream
    assert b"MIGRATE" not in stream.upper() and stream.count(b"DEL") == 1
    c.call("DEBUG", "PROPAGATION", "STOP")


class FakeTarget:
    """A target that reads commands and answers +OK to each only once released (never,
    if never released)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.release = threading.Event()
        self.got = b""
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.conns.append(conn)
        conn.settimeout(0.05)
        while not self.release.is_set():
            try:
                data = conn.recv(65536)
                if not data:
                    return
                self.got += data
            except socket.timeout:
                pass
            except OSError:
                return
        try:
            conn.sendall(b"+OK\r\n" * self.got.count(b"\r\n*"))
            conn.sendall(b"+OK\r\n")
        except OSError:
            pass

    def close(self):
        self.release.set()
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_migrate_times_out_reading(kind, redis_server, skein_server):
    """A target that never answers: IOERR reading within the timeout, the key kept."""
    srv = redis_server if kind == "redis" else skein_server
    fake = FakeTarget()
    try:
        c = RawConn(srv.port)
        c.call("SET", "slow", "v")
        reply = c.call("MIGRATE", "127.0.0.1", fake.port, "slow", "0", "300")
        assert reply == b"-IOERR error or timeout reading to target instance\r\n"
        assert c.call("EXISTS", "slow") == b":1\r\n"
        assert b"RESTORE" in fake.got and b"SELECT" in fake.got
    finally:
        fake.close()


def test_migrate_does_not_stall_its_worker(fresh_skein):
    """While a MIGRATE waits on a target that does not answer, another connection of the
    same (only) worker is served; once the target answers, the MIGRATE completes."""
    sk = fresh_skein(workers=1)
    fake = FakeTarget()
    try:
        a, b = RawConn(sk.port, timeout=60), RawConn(sk.port)
        a.call("SET", "k", "v")
        b.call("SET", "other", "1")
        a.send_raw(b"*6\r\n$7\r\nMIGRATE\r\n$9\r\n127.0.0.1\r\n$%d\r\n%d\r\n$1\r\nk\r\n$1\r\n0\r\n"
                   b"$5\r\n60000\r\n" % (len(str(fake.port)), fake.port))
        # The target has the RESTORE and has not answered: the worker still serves b.
        for _ in range(400):
            if b"RESTORE" in fake.got:
                break
            threading.Event().wait(0.01)
        assert b"RESTORE" in fake.got
        assert b.call("PING") == b"+PONG\r\n"
        assert b.call("GET", "other") == b"$1\r\n1\r\n"
        assert b.call("INCR", "other") == b":2\r\n"
        fake.release.set()
        assert a.read_reply() == b"+OK\r\n"
        assert a.call("EXISTS", "k") == b":0\r\n"
    finally:
        fake.close()


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_wait_after_migrate_waits_for_its_del(kind, fresh_redis, fresh_skein, redis_server):
    """The DEL a MIGRATE propagates (made on the offload pool in Skein) is the client's
    write for WAIT: a replica that never acknowledges leaves WAIT at 0, where a client that
    wrote nothing gets it counted at once."""
    from test_replication import info, replica_by_hand, wait_for
    src = fresh_redis() if kind == "redis" else fresh_skein(workers=1)
    mc = RawConn(src.port)
    mc.call("SET", "k", "v")
    replica, _, _ = replica_by_hand(src.port)
    wait_for(lambda: ",state=online," in info(mc).get("slave0", ""), "the replica online")
    c = RawConn(src.port)
    assert c.call("WAIT", "1", "100") == b":1\r\n"
    RawConn(redis_server.port).call("DEL", "k")
    assert c.call("MIGRATE", "127.0.0.1", redis_server.port, "k", "0", "5000") == b"+OK\r\n"
    assert c.call("WAIT", "1", "300") == b":0\r\n"
    replica.close()
