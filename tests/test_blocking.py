"""Blocking list and sorted-set commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
BZPOPMIN, BZPOPMAX, BZMPOP) with clients on several workers.

Scenarios whose outcome is deterministic run against redis-server 7.0.15 and a 2-worker
skein-server, and their replies must be equal byte for byte: the order waiters are
served in, BLMOVE feeding the next waiter, MULTI/EXEC serving after it completes,
timeouts, CLIENT UNBLOCK, a key deleted or of another type while waited on, blocking
commands inside MULTI. A producer/consumer load checks every element is delivered exactly
once. Waiting for a client to block polls INFO's blocked_clients (bounded); nothing
asserts a duration.
"""
import threading
import time

import pytest

from resp_client import NamedConns, RawConn, parse
from resp_client import encode as encode_args

DEADLINE_S = 30


def blocked_clients(conn):
    info = parse(conn.call("INFO", "clients")).decode()
    for line in info.splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError("no blocked_clients in INFO")


def wait_blocked(conn, n):
    end = time.time() + DEADLINE_S
    while time.time() < end:
        if blocked_clients(conn) == n:
            return
        time.sleep(0.005)
    raise AssertionError("never reached %d blocked clients" % n)


class Scenario(NamedConns):
    """Runs the same steps on one server; records every reply in order."""

    def __init__(self, port, proto):
        super().__init__(port, proto)
        self.admin = RawConn(port)
        self.admin.call("FLUSHALL")

    def call(self, name, *args):
        r = self.conn(name).call(*args)
        self.log.append((name, args, r))
        return r

    def block(self, name, *args):
        """Send a command expected to block; wait until the server counts it blocked."""
        before = blocked_clients(self.admin)
        self.conn(name).send_raw(encode(args))
        wait_blocked(self.admin, before + 1)

    def reply(self, name):
        r = self.conn(name).read_reply()
        self.log.append((name, "reply", r))
        return r

    def close(self):
        super().close()
        self.admin.close()


def encode(args):
    return encode_args(list(args))


def fifo_order(s):
    for name in ("a", "b", "c"):
        s.block(name, "BLPOP", "q", "0")
    s.call("p", "RPUSH", "q", "x", "y", "z", "w")
    for name in ("a", "b", "c"):
        s.reply(name)
    s.call("p", "LRANGE", "q", "0", "-1")


def pusher_sees_after_serving(s):
    s.block("a", "BRPOP", "q1", "q2", "0")
    s.call("p", "LPUSH", "q2", "1", "2", "3")
    s.call("p", "LRANGE", "q2", "0", "-1")
    s.reply("a")


def blmove_chain(s):
    s.block("a", "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
    s.block("b", "BLPOP", "dst", "0")
    s.call("p", "RPUSH", "src", "v1", "v2")
    s.reply("a")
    s.reply("b")
    s.call("p", "LRANGE", "src", "0", "-1")
    s.call("p", "EXISTS", "dst")


def brpoplpush_wrong_dest(s):
    s.block("a", "BRPOPLPUSH", "src", "dst", "0")
    s.call("p", "SET", "dst", "string")
    s.call("p", "RPUSH", "src", "v")
    s.reply("a")
    s.call("p", "LRANGE", "src", "0", "-1")


def multi_serves_after_exec(s):
    s.block("a", "BLPOP", "q", "0")
    s.call("p", "MULTI")
    s.call("p", "LPUSH", "q", "a")
    s.call("p", "LPUSH", "q", "b")
    s.call("p", "LPUSH", "q", "c")
    s.call("p", "EXEC")
    s.reply("a")
    s.call("p", "LRANGE", "q", "0", "-1")


def multi_push_and_pop(s):
    s.block("a", "BLPOP", "q", "0")
    s.call("p", "MULTI")
    s.call("p", "RPUSH", "q", "only")
    s.call("p", "LPOP", "q")
    s.call("p", "EXEC")
    s.call("p", "RPUSH", "q", "next")
    s.reply("a")


def blocking_inside_multi(s):
    s.call("a", "MULTI")
    s.call("a", "BLPOP", "nothing", "0")
    s.call("a", "BLMOVE", "nothing", "x", "LEFT", "LEFT", "0")
    s.call("a", "BZPOPMIN", "nothing", "0")
    s.call("a", "BLMPOP", "0", "1", "nothing", "LEFT")
    s.call("a", "BZMPOP", "0", "1", "nothing", "MIN", "COUNT", "2")
    s.call("a", "EXEC")


def type_changes_while_waiting(s):
    s.block("a", "BLPOP", "k", "0")
    s.call("p", "SET", "k", "string")
    s.call("p", "DEL", "k")
    s.call("p", "SADD", "k", "m")
    s.call("p", "DEL", "k")
    s.call("p", "RPUSH", "k", "finally")
    s.reply("a")


def unblock_timeout_and_error(s):
    ida = parse(s.conn("a").call("CLIENT", "ID"))
    idb = parse(s.conn("b").call("CLIENT", "ID"))
    s.block("a", "BLPOP", "k", "0")
    s.block("b", "BLMOVE", "k", "d", "LEFT", "RIGHT", "0")
    s.call("p", "CLIENT", "UNBLOCK", str(ida), "TIMEOUT")
    s.call("p", "CLIENT", "UNBLOCK", str(idb), "ERROR")
    s.reply("a")
    s.reply("b")
    s.call("p", "CLIENT", "UNBLOCK", str(ida))
    s.call("a", "PING")
    s.call("b", "PING")


def timeouts(s):
    s.call("a", "BLPOP", "k", "0.01")
    s.call("a", "BRPOPLPUSH", "k", "d", "0.01")
    s.call("a", "BZPOPMAX", "k", "0.01")
    s.call("a", "BLMPOP", "0.01", "2", "k", "k2", "RIGHT", "COUNT", "3")
    s.call("a", "BZMPOP", "0.01", "1", "k", "MAX")


def pipeline_after_block(s):
    # Commands pipelined behind a blocked one run only after it is served.
    c = s.conn("a")
    c.send_raw(encode(["BLPOP", "k", "0"]) + encode(["LLEN", "k"]) + encode(["PING"]))
    wait_blocked(s.admin, 1)
    s.call("p", "RPUSH", "k", "1", "2")
    s.reply("a")
    s.reply("a")
    s.reply("a")


def zset_waiters(s):
    s.block("a", "BZPOPMIN", "z1", "z2", "0")
    s.block("b", "BZMPOP", "0", "2", "z2", "z1", "MAX", "COUNT", "2")
    s.block("c", "BLPOP", "z2", "0")
    s.call("p", "ZADD", "z2", "1", "one", "2", "two", "3", "three", "1.5", "x")
    s.reply("a")
    s.reply("b")
    s.call("p", "ZRANGE", "z2", "0", "-1", "WITHSCORES")
    s.call("p", "DEL", "z2")
    s.call("p", "RPUSH", "z2", "list")
    s.reply("c")


def swapdb_wakes_waiters(s):
    s.call("p", "SELECT", "1")
    s.call("p", "RPUSH", "q", "from-db1")
    s.call("p", "ZADD", "z", "1", "m")
    s.block("a", "BLPOP", "q", "0")
    s.block("b", "BZPOPMIN", "z", "nothing", "0")
    s.call("p", "SWAPDB", "0", "1")
    s.reply("a")
    s.reply("b")
    s.call("p", "SELECT", "0")
    s.call("p", "EXISTS", "q", "z")


def errors(s):
    s.call("a", "BLPOP", "k", "-1")
    s.call("a", "BLPOP", "k", "abc")
    s.call("a", "BLPOP", "k", "nan")
    s.call("a", "BLPOP", "k", "1e400")
    s.call("a", "BLPOP", "k", "-inf")
    s.call("a", "BLPOP", "k", " 1")
    s.call("a", "BLPOP", "k", "9223372036854775807")
    s.call("a", "BLPOP", "k", "0x0.1")
    s.call("a", "BZPOPMIN", "k", "-0.0011")
    s.call("a", "RPUSH", "k", "x")
    # Rounds to 0 in long double (block forever): served at once as the key has data.
    s.call("a", "BLPOP", "k", "-0.001")
    s.call("a", "BLMOVE", "k", "d", "UP", "LEFT", "0")
    s.call("a", "BLMPOP", "0", "0", "k", "LEFT")
    s.call("a", "BLMPOP", "0", "3", "k", "LEFT")
    s.call("a", "BLMPOP", "0", "1", "k", "MIDDLE")
    s.call("a", "BLMPOP", "0", "1", "k", "LEFT", "COUNT", "0")
    s.call("a", "BZMPOP", "0", "1", "k", "MIN", "COUNT", "1", "COUNT", "2")
    s.call("a", "SET", "str", "v")
    s.call("a", "BLPOP", "nothing", "str", "0")
    s.call("a", "BZPOPMIN", "str", "0")
    s.call("a", "BLMOVE", "str", "d", "LEFT", "LEFT", "0")
    s.call("a", "RPUSH", "l", "x")
    s.call("a", "BLMOVE", "l", "str", "LEFT", "LEFT", "0")
    s.call("a", "BLPOP", "l", "0")
    s.call("a", "RPUSH", "l", "y", "z")
    s.call("a", "BLMPOP", "0", "2", "missing", "l", "RIGHT", "COUNT", "5")


SCENARIOS = [fifo_order, pusher_sees_after_serving, blmove_chain, brpoplpush_wrong_dest,
             multi_serves_after_exec, multi_push_and_pop, blocking_inside_multi,
             type_changes_while_waiting, unblock_timeout_and_error, timeouts,
             pipeline_after_block, zset_waiters, swapdb_wakes_waiters, errors]


def assert_same_as_redis(scenario, proto, redis_server, skein_server):
    """Run `scenario` on both servers: every client gets the same replies in order."""
    logs = []
    for port in (redis_server.port, skein_server.port):
        s = Scenario(port, proto)
        try:
            scenario(s)
            logs.append(s.log)
        finally:
            s.close()
    ref, got = logs
    for a, b in zip(ref, got):
        # Client ids differ between the servers: compare who got which reply.
        assert (a[0], a[2]) == (b[0], b[2]), "redis %r\nskein %r" % (a, b)
    assert len(ref) == len(got)


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_same_as_redis(scenario, proto, redis_server, skein_server):
    assert_same_as_redis(scenario, proto, redis_server, skein_server)


def test_disconnected_waiter_is_cleaned_up(skein_server):
    admin = RawConn(skein_server.port)
    admin.call("DEL", "gone")
    c = RawConn(skein_server.port)
    c.send_raw(encode(["BLPOP", "gone", "0"]))
    wait_blocked(admin, 1)
    c.close()
    wait_blocked(admin, 0)
    # The element is not lost to the departed client.
    admin.call("RPUSH", "gone", "v")
    assert parse(admin.call("LRANGE", "gone", "0", "-1")) == [b"v"]
    admin.call("DEL", "gone")
    admin.close()


def test_producers_and_consumers_exactly_once(fresh_skein):
    """Consumers on every worker block on several queues; producers push; each element
    is received exactly once."""
    srv = fresh_skein(workers=4)
    queues = ["jobs:%d" % i for i in range(3)]
    producers, per_producer, consumers = 4, 500, 6
    total = producers * per_producer
    received = []
    lock = threading.Lock()
    errors = []

    def consume():
        c = RawConn(srv.port)
        try:
            while True:
                r = parse(c.call("BLPOP", *queues, "0"))
                if r[1] == b"stop":
                    return
                with lock:
                    received.append(r[1])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            c.close()

    def produce(pid):
        c = RawConn(srv.port)
        try:
            for i in range(per_producer):
                q = queues[(pid + i) % len(queues)]
                cmd = "RPUSH" if i % 2 else "LPUSH"
                c.call(cmd, q, "%d:%d" % (pid, i))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            c.close()

    cs = [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
    for t in cs:
        t.start()
    ps = [threading.Thread(target=produce, args=(p,), daemon=True) for p in range(producers)]
    for t in ps:
        t.start()
    for t in ps:
        t.join(DEADLINE_S)
    admin = RawConn(srv.port)
    end = time.time() + DEADLINE_S
    while time.time() < end:
        with lock:
            if len(received) == total:
                break
        time.sleep(0.01)
    for _ in range(consumers):
        admin.call("RPUSH", queues[0], "stop")
    for t in cs:
        t.join(DEADLINE_S)
    assert not errors, errors
    assert len(received) == total
    assert len(set(received)) == total
    for q in queues:
        assert parse(admin.call("LLEN", q)) == 0
    admin.close()


def test_served_pops_propagate_as_pops(fresh_skein):
    srv = fresh_skein()
    admin = RawConn(srv.port)
    assert admin.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    a = RawConn(srv.port)
    a.send_raw(encode(["BLMPOP", "0", "1", "q", "LEFT", "COUNT", "5"]))
    wait_blocked(admin, 1)
    admin.call("RPUSH", "q", "1", "2")
    assert parse(a.read_reply()) == [b"q", [b"1", b"2"]]
    b = RawConn(srv.port)
    b.send_raw(encode(["BLMOVE", "s", "d", "LEFT", "RIGHT", "0"]))
    wait_blocked(admin, 1)
    admin.call("RPUSH", "s", "x")
    assert parse(b.read_reply()) == b"x"
    raw = parse(admin.call("DEBUG", "PROPAGATION", "TAKE"))
    text = b" ".join(x if isinstance(x, bytes) else b"" for x in _flatten(raw))
    assert b"LPOP" in text and b"LMOVE" in text and b"BLMPOP" not in text
    admin.call("DEBUG", "PROPAGATION", "STOP")
    for c in (a, b, admin):
        c.close()


def _flatten(x):
    if isinstance(x, list):
        for y in x:
            yield from _flatten(y)
    else:
        yield x
