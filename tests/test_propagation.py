"""The propagation stream (what the AOF and replicas receive), read with Skein's
DEBUG PROPAGATION, after a concurrent write load from clients on several workers, replayed
into a fresh redis-server 7.0.15: both datasets must be the same."""
import threading

import redis

from resp_client import RawConn, _parse


def commands(stream):
    """The commands of a RESP stream, as lists of bytes."""
    out, pos = [], 0
    while pos < len(stream):
        cmd, pos = _parse(stream, pos)
        out.append(cmd)
    return out


def dataset(port):
    """{(db, key): (type, value, has_ttl)} of every database."""
    out = {}
    for db in range(16):
        r = redis.Redis(port=port, db=db)
        for k in r.keys("*"):
            t = r.type(k)
            v = r.get(k) if t == b"string" else None
            out[(db, k)] = (t, v, r.pttl(k) > 0)
    return out


def worker(port, n, wid):
    r = redis.Redis(port=port)
    r1 = redis.Redis(port=port, db=1)
    for i in range(n):
        shared = "shared:%d" % (i % 5)
        r.append("log", "%d.%d," % (wid, i))
        r.incr("counter")
        r.incrby(shared, wid + 1)
        r.set("w%d:%d" % (wid, i), i, ex=1000)
        r.setex("tmp%d" % wid, 1000, i)
        r.incrbyfloat("float", "0.5")
        r.getex("w%d:%d" % (wid, i), px=500000)
        r.mset({"m%d:a" % wid: i, "m%d:b" % wid: -i})
        r.pexpire("m%d:b" % wid, 1)
        if i % 7 == 0:
            r.rename("m%d:a" % wid, "renamed%d" % wid)
        if i % 11 == 0:
            r.move("tmp%d" % wid, 1)
            r1.delete("tmp%d" % wid)
        r1.set("db1:%d" % (i % 3), "%d-%d" % (wid, i))
        r.setrange("range", (wid * 3 + i) % 20, "x%d" % wid)
        r.setbit("bits", (wid * 97 + i * 13) % 4000, 1)
        r.get("m%d:b" % wid)  # lazily expired: propagated as DEL
        r.delete("gone%d" % wid)
        if i % 5 == 0:
            # A transaction: one record, wrapped in MULTI/EXEC.
            tx = r.pipeline(transaction=True)
            tx.incr("tx:n").append("tx:log", "%d," % wid).select(1).incr("tx:db1").select(0)
            tx.execute()


def test_stream_replays_to_same_dataset(fresh_skein, fresh_redis):
    skein = fresh_skein(workers=4)
    ref = fresh_redis()
    c = RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    threads = [threading.Thread(target=worker, args=(skein.port, 150, w)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    raw = c.call("DEBUG", "PROPAGATION", "TAKE")
    # The bulk reply: "$<len>\r\n<bytes>\r\n".
    head, _, rest = raw.partition(b"\r\n")
    stream = rest[: int(head[1:])]
    cmds = commands(stream)
    names = {c[0].upper() for c in cmds}
    assert len(cmds) > 1000
    # Rewritten forms: absolute expiry times, SET for INCRBYFLOAT, DEL for expired keys.
    assert {b"PEXPIREAT", b"SET", b"DEL", b"SELECT"} <= names
    assert b"SETEX" not in names and b"INCRBYFLOAT" not in names and b"GETEX" not in names
    feed = RawConn(ref.port)
    feed.send_raw(stream)
    # Every replayed command was accepted.
    replies = [feed.read_reply() for _ in cmds]
    assert not [r for r in replies if r.startswith(b"-")]
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    assert dataset(skein.port) == dataset(ref.port)
