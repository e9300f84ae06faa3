"""Differential MULTI/EXEC/WATCH checks that a one-connection script cannot express
(the one-connection cases are in scripts/multi_exec.txt): a second connection writes
between WATCH and EXEC, keys expire between WATCH and EXEC, QUIT and RESET inside MULTI,
a client that disconnects mid-transaction, a pipelined transaction, MONITOR inside MULTI,
the no-multi commands SAVE/SYNC/PSYNC (each skipped while skein-server lacks it), and
WRONGTYPE inside the EXEC array (skipped while skein-server has no list type).

Each scenario runs the same steps on redis-server 7.0.15 and on skein-server, with two
connections to each, and the whole sequence of raw replies must be equal byte for byte,
in RESP2 and in RESP3. Scenarios that change server-wide state (DEBUG SET-ACTIVE-EXPIRE)
get servers of their own.
"""
import socket
import time

import pytest

from resp_client import RawConn, parse

PROTOS = [2, 3]


def connect(port, proto):
    c = RawConn(port)
    if proto == 3:
        reply = c.call("HELLO", "3")
        assert reply.startswith(b"%"), reply
    return c


def steps_replies(a, b, steps):
    """Run steps: ("a", args...) / ("b", args...) on a connection, ("sleep", ms).
    Returns the raw replies, labelled with the step."""
    out = []
    for step in steps:
        who, args = step[0], step[1:]
        if who == "sleep":
            time.sleep(args[0] / 1000.0)
            continue
        conn = a if who == "a" else b
        out.append((who, " ".join(a_.decode() if isinstance(a_, bytes) else str(a_)
                                  for a_ in args), conn.call(*args)))
    return out


def run_both(redis_port, skein_port, proto, steps, setup=()):
    results = []
    for port in (redis_port, skein_port):
        a, b = connect(port, proto), connect(port, proto)
        try:
            b.call("FLUSHALL")
            for cmd in setup:
                b.call(*cmd)
            results.append(steps_replies(a, b, steps))
        finally:
            a.close()
            b.close()
    return results


def assert_same(results):
    ref, sk = results
    assert len(ref) == len(sk)
    diffs = ["%s> %s\n  redis: %r\n  skein: %r" % (w, cmd, r, s)
             for (w, cmd, r), (_, _, s) in zip(ref, sk) if r != s]
    assert not diffs, "\n".join(diffs)


def txn(*queued):
    """Connection a: MULTI, the queued commands, EXEC."""
    return [("a", "MULTI")] + [("a",) + tuple(q) for q in queued] + [("a", "EXEC")]


# (name, setup run by b in db 0, steps). `a` is the watching client; `b` writes.
WATCH_CASES = [
    ("set", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SET", "k", "2")] + txn(("GET", "k"))),
    ("set-same-value", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SET", "k", "1")] + txn(("GET", "k"))),
    ("set-creates", [],
     [("a", "WATCH", "k"), ("b", "SET", "k", "1")] + txn(("GET", "k"))),
    ("set-nx-fails", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SET", "k", "2", "NX")] + txn(("GET", "k"))),
    ("read-only", [("SET", "k", "1", "EX", "100")],
     [("a", "WATCH", "k"), ("b", "GET", "k"), ("b", "TTL", "k"), ("b", "EXISTS", "k"),
      ("b", "STRLEN", "k"), ("b", "GETEX", "k"), ("b", "COPY", "k", "k2")]
     + txn(("GET", "k"))),
    ("expire", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "EXPIRE", "k", "100")] + txn(("TTL", "k"))),
    ("expire-missing", [],
     [("a", "WATCH", "k"), ("b", "EXPIRE", "k", "100")] + txn(("TTL", "k"))),
    ("expire-past", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "EXPIREAT", "k", "1")] + txn(("EXISTS", "k"))),
    ("pexpire-negative", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "PEXPIRE", "k", "-1")] + txn(("EXISTS", "k"))),
    ("expire-nx-refused", [("SET", "k", "1", "EX", "100")],
     [("a", "WATCH", "k"), ("b", "EXPIRE", "k", "5", "NX")] + txn(("EXISTS", "k"))),
    ("persist", [("SET", "k", "1", "EX", "100")],
     [("a", "WATCH", "k"), ("b", "PERSIST", "k")] + txn(("TTL", "k"))),
    ("persist-no-ttl", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "PERSIST", "k")] + txn(("TTL", "k"))),
    ("getex-persist", [("SET", "k", "1", "EX", "100")],
     [("a", "WATCH", "k"), ("b", "GETEX", "k", "PERSIST")] + txn(("TTL", "k"))),
    ("getex-ex", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "GETEX", "k", "EX", "100")] + txn(("TTL", "k"))),
    ("del", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "DEL", "k")] + txn(("EXISTS", "k"))),
    ("del-missing", [],
     [("a", "WATCH", "k"), ("b", "DEL", "k")] + txn(("EXISTS", "k"))),
    ("unlink", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "UNLINK", "k")] + txn(("EXISTS", "k"))),
    ("getdel", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "GETDEL", "k")] + txn(("EXISTS", "k"))),
    ("rename-from", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "RENAME", "k", "j")] + txn(("EXISTS", "k", "j"))),
    ("rename-to", [("SET", "j", "1")],
     [("a", "WATCH", "k"), ("b", "RENAME", "j", "k")] + txn(("GET", "k"))),
    ("rename-to-existing", [("SET", "j", "1"), ("SET", "k", "2")],
     [("a", "WATCH", "k"), ("b", "RENAME", "j", "k")] + txn(("GET", "k"))),
    ("renamenx-refused", [("SET", "j", "1"), ("SET", "k", "2")],
     [("a", "WATCH", "k"), ("b", "RENAMENX", "j", "k")] + txn(("GET", "k"))),
    ("renamenx-from", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "RENAMENX", "k", "j")] + txn(("GET", "j"))),
    ("move-away", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "MOVE", "k", "1")] + txn(("EXISTS", "k"))),
    ("copy-onto", [("SET", "j", "1")],
     [("a", "WATCH", "k"), ("b", "COPY", "j", "k")] + txn(("GET", "k"))),
    ("flushdb-existing", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "FLUSHDB")] + txn(("PING",))),
    ("flushdb-missing", [("SET", "z", "1")],
     [("a", "WATCH", "k"), ("b", "FLUSHDB")] + txn(("PING",))),
    ("flushdb-async-existing", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "FLUSHDB", "ASYNC")] + txn(("PING",))),
    ("flushall-existing", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "FLUSHALL")] + txn(("PING",))),
    ("flushall-missing", [("SET", "z", "1")],
     [("a", "WATCH", "k"), ("b", "FLUSHALL")] + txn(("PING",))),
    ("flushall-sync-existing-other-db", [("SELECT", "6"), ("SET", "k", "1"), ("SELECT", "0")],
     [("a", "SELECT", "6"), ("a", "WATCH", "k"), ("a", "SELECT", "0"),
      ("b", "FLUSHALL", "SYNC")] + txn(("PING",))),
    ("flushdb-of-another-db", [("SELECT", "6"), ("SET", "k", "1"), ("SELECT", "0")],
     [("a", "SELECT", "6"), ("a", "WATCH", "k"), ("b", "FLUSHDB")] + txn(("GET", "k"))
     + [("a", "SELECT", "0")]),
    ("swapdb-key-in-watched-db", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SWAPDB", "0", "1")] + txn(("PING",))),
    ("swapdb-key-in-other-db", [("SELECT", "1"), ("SET", "k", "1"), ("SELECT", "0")],
     [("a", "WATCH", "k"), ("b", "SWAPDB", "1", "0")] + txn(("GET", "k"))),
    ("swapdb-key-in-neither", [("SET", "z", "1")],
     [("a", "WATCH", "k"), ("b", "SWAPDB", "0", "1")] + txn(("PING",))),
    ("swapdb-unrelated-dbs", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SWAPDB", "2", "3")] + txn(("PING",))),
    ("write-same-name-other-db", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SELECT", "1"), ("b", "SET", "k", "2"),
      ("b", "SELECT", "0")] + txn(("GET", "k"))),
    ("watch-in-db1-write-db1", [],
     [("a", "SELECT", "1"), ("a", "WATCH", "k"), ("a", "SELECT", "0"), ("b", "SELECT", "1"),
      ("b", "SET", "k", "2"), ("b", "SELECT", "0")] + txn(("GET", "k"))),
    ("watch-in-db1-write-db0", [],
     [("a", "SELECT", "1"), ("a", "WATCH", "k"), ("b", "SET", "k", "2")] + txn(("GET", "k"))
     + [("a", "SELECT", "0")]),
    ("one-of-many", [("SET", "k", "1")],
     [("a", "WATCH", "x", "y", "k", "z"), ("b", "SET", "z", "1")] + txn(("GET", "k"))),
    ("unwatch", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("a", "UNWATCH"), ("b", "SET", "k", "2")] + txn(("GET", "k"))),
    ("write-after-multi", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("a", "MULTI"), ("a", "INCR", "k"), ("b", "SET", "k", "5"),
      ("a", "EXEC"), ("b", "GET", "k")]),
    ("write-before-and-queued", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("a", "MULTI"), ("a", "INCR", "k"), ("b", "INCR", "k"),
      ("a", "INCR", "k"), ("a", "EXEC"), ("b", "GET", "k")]),
    ("other-client-transaction", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "MULTI"), ("b", "INCR", "k"), ("b", "EXEC")]
     + txn(("GET", "k"))),
    ("other-client-discard", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "MULTI"), ("b", "INCR", "k"), ("b", "DISCARD")]
     + txn(("GET", "k"))),
    ("failed-exec-unwatches", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "SET", "k", "2")] + txn(("GET", "k"))
     + [("b", "SET", "k", "3")] + txn(("GET", "k"))),
    ("both-watch-both-write", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "WATCH", "k"), ("b", "MULTI"), ("b", "INCR", "k"),
      ("a", "MULTI"), ("a", "INCR", "k"), ("b", "EXEC"), ("a", "EXEC"), ("b", "GET", "k")]),
    ("string-writes-that-change-nothing", [("SET", "k", "abc")],
     [("a", "WATCH", "k"), ("b", "SETRANGE", "k", "1", ""), ("b", "SETBIT", "k", "1", "1"),
      ("b", "BITFIELD", "k", "SET", "u8", "8", "98"), ("b", "MSETNX", "k", "x", "j", "y"),
      ("b", "SETNX", "k", "z")] + txn(("GET", "k"))),
    ("setbit-change", [("SET", "k", "abc")],
     [("a", "WATCH", "k"), ("b", "SETBIT", "k", "0", "1")] + txn(("GET", "k"))),
    ("bitfield-change", [("SET", "k", "abc")],
     [("a", "WATCH", "k"), ("b", "BITFIELD", "k", "INCRBY", "u8", "0", "1")]
     + txn(("GET", "k"))),
    ("incrby-zero", [("SET", "k", "7")],
     [("a", "WATCH", "k"), ("b", "INCRBY", "k", "0")] + txn(("GET", "k"))),
    ("append-empty", [("SET", "k", "7")],
     [("a", "WATCH", "k"), ("b", "APPEND", "k", "")] + txn(("GET", "k"))),
    ("mset", [],
     [("a", "WATCH", "k"), ("b", "MSET", "j", "1", "k", "2")] + txn(("GET", "k"))),
    ("bitop-dest", [("SET", "j", "1")],
     [("a", "WATCH", "k"), ("b", "BITOP", "NOT", "k", "j")] + txn(("GET", "k"))),
]


@pytest.mark.parametrize("proto", PROTOS)
@pytest.mark.parametrize("case", WATCH_CASES, ids=[c[0] for c in WATCH_CASES])
def test_watch_other_connection(case, proto, redis_server, skein_server):
    name, setup, steps = case
    assert_same(run_both(redis_server.port, skein_server.port, proto, steps, setup))


@pytest.mark.parametrize("proto", PROTOS)
def test_watch_restore_replace(proto, redis_server, skein_server):
    """RESTORE REPLACE onto a watched key (the payload comes from each server's own DUMP)."""
    results = []
    for port in (redis_server.port, skein_server.port):
        a, b = connect(port, proto), connect(port, proto)
        try:
            b.call("FLUSHALL")
            b.call("SET", "src", "payload")
            b.call("SET", "k", "old")
            dump = b.call("DUMP", "src")
            assert dump.startswith(b"$"), dump
            payload = dump[dump.index(b"\r\n") + 2:-2]
            out = [a.call("WATCH", "k"), b.call("RESTORE", "k", "0", payload, "REPLACE"),
                   a.call("MULTI"), a.call("GET", "k"), a.call("EXEC"),
                   a.call("WATCH", "k2"), b.call("RESTORE", "k2", "0", payload),
                   a.call("MULTI"), a.call("GET", "k2"), a.call("EXEC")]
            results.append([("-", str(i), r) for i, r in enumerate(out)])
        finally:
            a.close()
            b.close()
    assert_same(results)


# Expiry between WATCH and EXEC. Each runs with the active expiry cycle on and off
# (DEBUG SET-ACTIVE-EXPIRE), on servers of its own.
EXPIRY_CASES = [
    # The key expires after WATCH: EXEC fails, whether or not the key was deleted yet.
    ("expires-after-watch", [("SET", "k", "1")],
     [("a", "WATCH", "k"), ("b", "PEXPIRE", "k", "50"), ("sleep", 150)]
     + txn(("EXISTS", "k"))),
    ("expires-after-watch-set-px", [("SET", "k", "1", "PX", "50")],
     [("a", "WATCH", "k"), ("sleep", 150)] + txn(("EXISTS", "k"))),
    ("expires-after-watch-then-lazy-get", [("SET", "k", "1", "PX", "50")],
     [("a", "WATCH", "k"), ("sleep", 150), ("b", "GET", "k")] + txn(("EXISTS", "k"))),
    ("expires-after-watch-self-read", [("SET", "k", "1", "PX", "50")],
     [("a", "WATCH", "k"), ("sleep", 150), ("a", "GET", "k")] + txn(("EXISTS", "k"))),
    # A TTL far away changes nothing.
    ("ttl-not-reached", [("SET", "k", "1", "EX", "1000")],
     [("a", "WATCH", "k"), ("sleep", 60)] + txn(("EXISTS", "k"))),
]

# Keys already expired (but maybe not yet deleted) when WATCH runs; the active cycle is
# off so that they stay in the keyspace until something touches them.
EXPIRED_AT_WATCH_CASES = [
    ("nothing-happens", [], txn(("EXISTS", "k"))),
    ("lazy-get", [("b", "GET", "k")], txn(("EXISTS", "k"))),
    ("exists", [("b", "EXISTS", "k")], txn(("EXISTS", "k"))),
    ("del", [("b", "DEL", "k")], txn(("EXISTS", "k"))),
    ("set", [("b", "SET", "k", "2")], txn(("GET", "k"))),
    ("flushdb", [("b", "FLUSHDB")], txn(("EXISTS", "k"))),
    ("flushall", [("b", "FLUSHALL")], txn(("EXISTS", "k"))),
    ("swapdb-with-empty", [("b", "SWAPDB", "0", "1")], txn(("EXISTS", "k"))),
    ("swapdb-with-live-key", [("b", "SELECT", "1"), ("b", "SET", "k", "live"),
                              ("b", "SELECT", "0"), ("b", "SWAPDB", "0", "1")],
     txn(("GET", "k"))),
]


@pytest.fixture(scope="module")
def expiry_servers():
    """A redis-server and a skein-server of their own (DEBUG SET-ACTIVE-EXPIRE changes)."""
    from conftest import ServerProc
    ref, sk = ServerProc("redis"), ServerProc("skein", workers=2)
    yield ref, sk
    ref.stop()
    sk.stop()


def set_active_expire(servers, on):
    for s in servers:
        c = RawConn(s.port)
        try:
            assert c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1" if on else "0") == b"+OK\r\n"
        finally:
            c.close()


@pytest.mark.parametrize("proto", PROTOS)
@pytest.mark.parametrize("active", [True, False], ids=["active-on", "active-off"])
@pytest.mark.parametrize("case", EXPIRY_CASES, ids=[c[0] for c in EXPIRY_CASES])
def test_watch_expiry(case, active, proto, expiry_servers):
    name, setup, steps = case
    ref, sk = expiry_servers
    set_active_expire(expiry_servers, active)
    try:
        assert_same(run_both(ref.port, sk.port, proto, steps, setup))
    finally:
        set_active_expire(expiry_servers, True)


@pytest.mark.parametrize("proto", PROTOS)
@pytest.mark.parametrize("case", EXPIRED_AT_WATCH_CASES,
                         ids=[c[0] for c in EXPIRED_AT_WATCH_CASES])
def test_watch_key_already_expired(case, proto, expiry_servers):
    name, after_watch, tail = case
    ref, sk = expiry_servers
    set_active_expire(expiry_servers, False)
    steps = [("b", "SET", "k", "1", "PX", "20"), ("sleep", 80), ("a", "WATCH", "k")]
    steps += after_watch + tail
    try:
        assert_same(run_both(ref.port, sk.port, proto, steps))
    finally:
        set_active_expire(expiry_servers, True)


def read_eof(conn, timeout=5):
    """True when the server closed the connection (after any pending bytes)."""
    conn.sock.settimeout(timeout)
    try:
        while True:
            chunk = conn.sock.recv(65536)
            if not chunk:
                return True
            conn.buf += chunk
    except (socket.timeout, ConnectionResetError):
        return False


@pytest.mark.parametrize("proto", PROTOS)
def test_quit_inside_multi(proto, redis_server, skein_server):
    """QUIT is not queued: it answers +OK, closes, and the transaction never runs."""
    results = []
    for port in (redis_server.port, skein_server.port):
        a, b = connect(port, proto), connect(port, proto)
        try:
            b.call("FLUSHALL")
            out = [a.call("WATCH", "w"), a.call("MULTI"), a.call("SET", "q", "1"),
                   a.call("QUIT")]
            out.append(b"EOF" if read_eof(a) and a.buf == b"" else b"open:" + a.buf)
            out.append(b.call("EXISTS", "q"))
            # The watch went with the connection: b's own WATCH/EXEC is not affected.
            out += [b.call("WATCH", "w"), b.call("SET", "w", "1"), b.call("UNWATCH"),
                    b.call("MULTI"), b.call("GET", "w"), b.call("EXEC")]
            results.append([("-", str(i), r) for i, r in enumerate(out)])
        finally:
            a.close()
            b.close()
    assert_same(results)


@pytest.mark.parametrize("proto", PROTOS)
def test_reset_inside_multi(proto, redis_server, skein_server):
    """RESET discards the transaction, unwatches, selects db 0 and goes back to RESP2."""
    results = []
    for port in (redis_server.port, skein_server.port):
        a, b = connect(port, proto), connect(port, proto)
        try:
            b.call("FLUSHALL")
            b.call("SET", "k", "1")
            out = [a.call("SELECT", "3"), a.call("SET", "in3", "x"), a.call("SELECT", "0"),
                   a.call("WATCH", "k"), a.call("SELECT", "3"), a.call("MULTI"),
                   a.call("INCR", "n"), a.call("RESET"),
                   a.call("EXEC"), a.call("DISCARD"), a.call("GET", "in3"),
                   a.call("EXISTS", "n"),
                   b.call("SET", "k", "2"),  # would have failed the EXEC had RESET kept the watch
                   a.call("MULTI"), a.call("GET", "k"), a.call("EXEC"),
                   # RESP2 again: a null is $-1, a map is a flat array.
                   a.call("GET", "nokey"), a.call("CONFIG", "GET", "maxmemory")]
            results.append([("-", str(i), r) for i, r in enumerate(out)])
        finally:
            a.close()
            b.close()
    assert_same(results)


@pytest.mark.parametrize("proto", PROTOS)
def test_disconnect_inside_multi(proto, redis_server, skein_server):
    """A client that goes away mid-transaction: nothing it queued runs."""
    results = []
    for port in (redis_server.port, skein_server.port):
        a, b = connect(port, proto), connect(port, proto)
        try:
            b.call("FLUSHALL")
            a_id = parse(a.call("CLIENT", "ID"))
            out = [a.call("MULTI"), a.call("SET", "gone", "1"), a.call("INCR", "ctr")]
            a.close()
            # Wait (bounded) until the server has dropped the client, instead of sleeping.
            for _ in range(500):
                if b"id=%d " % a_id not in parse(b.call("CLIENT", "LIST")):
                    break
                time.sleep(0.01)
            out += [b.call("EXISTS", "gone", "ctr"), b.call("DBSIZE")]
            results.append([("-", str(i), r) for i, r in enumerate(out)])
        finally:
            b.close()
    assert_same(results)


@pytest.mark.parametrize("proto", PROTOS)
def test_pipelined_transaction(proto, redis_server, skein_server):
    """A whole transaction (and a failing one) in one write; replies in order."""
    cmds = [("WATCH", "p"), ("MULTI",), ("SET", "p", "1"), ("INCR", "p"), ("GET", "p"),
            ("EXEC",), ("MULTI",), ("INCR", "p"), ("NOSUCH",), ("EXEC",), ("GET", "p"),
            ("MULTI",), ("EXEC",), ("EXEC",), ("MULTI",), ("INCR", "p"), ("DISCARD",),
            ("GET", "p")]
    results = []
    for port in (redis_server.port, skein_server.port):
        a = connect(port, proto)
        try:
            a.call("FLUSHALL")
            out = a.pipeline(cmds)
            results.append([("a", " ".join(c), r) for c, r in zip(cmds, out)])
        finally:
            a.close()
    assert_same(results)


def skein_has(port, *args):
    c = RawConn(port)
    try:
        reply = c.call(*args)
    finally:
        c.close()
    return not reply.startswith(b"-ERR unknown command")


@pytest.mark.parametrize("proto", PROTOS)
def test_wrongtype_inside_exec(proto, redis_server, skein_server):
    """WRONGTYPE is a run-time error: it takes its slot in the EXEC array, the other
    commands run."""
    if not skein_has(skein_server.port, "LLEN", "multi:probe"):
        pytest.skip("lists are not in this build")
    steps = [("a", "RPUSH", "l", "x"), ("a", "SET", "s", "v")] + txn(
        ("GET", "l"), ("INCR", "l"), ("APPEND", "l", "x"), ("SET", "s2", "v2"),
        ("LPUSH", "s", "y"), ("SETRANGE", "l", "0", "x"), ("GETDEL", "l"),
        ("MGET", "l", "s"), ("EXISTS", "l", "s", "s2")) + [("a", "TYPE", "l")]
    assert_same(run_both(redis_server.port, skein_server.port, proto, steps))


# SHUTDOWN is in scripts/multi_exec.txt.
NO_MULTI = [("SAVE",), ("SYNC",), ("PSYNC", "?", "-1")]


@pytest.mark.parametrize("proto", PROTOS)
@pytest.mark.parametrize("command", NO_MULTI, ids=[c[0] for c in NO_MULTI])
def test_no_multi_commands_refused(command, proto, redis_server, skein_server):
    """Commands flagged no-multi are refused while queuing and abort the transaction
    (each on a connection of its own: run by mistake, they would take it over)."""
    c = RawConn(skein_server.port)
    try:
        known = parse(c.call("COMMAND", "INFO", command[0])) != [None]
    finally:
        c.close()
    if not known:
        pytest.skip("%s is not in this build" % command[0])
    steps = [("a", "SET", "q", "0")] + txn(("INCR", "q"), command, ("INCR", "q")) + [
        ("a", "GET", "q")]
    assert_same(run_both(redis_server.port, skein_server.port, proto, steps))


@pytest.mark.parametrize("proto", PROTOS)
def test_monitor_inside_multi(proto, redis_server, skein_server):
    """MONITOR is queued, then fails inside EXEC (a transaction's client may not block);
    the connection stays an ordinary one."""
    steps = txn(("MONITOR",), ("PING",)) + [("a", "PING"), ("b", "SET", "m", "1"),
                                            ("a", "GET", "m")]
    assert_same(run_both(redis_server.port, skein_server.port, proto, steps))
