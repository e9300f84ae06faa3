"""A consumer group read by many consumers at once, on connections spread over the
workers of a 4-worker skein-server (or redis-server with SKEIN_TEST_AGAINST_REDIS=1: the
invariants are Redis's). Producers XADD while consumers XREADGROUP (some blocking, some
not, some with COUNT) and XACK what they got, and a claimer XAUTOCLAIMs now and then:

* every entry is delivered by `>` exactly once (no entry to two consumers, none lost);
* what a consumer acknowledged was pending and its own; at the end nothing is pending,
  XPENDING's summary, XINFO GROUPS and each consumer's pending count agree;
* the group's last delivered ID is the stream's last ID, its lag 0.

Bounded by counts (a deadline only guards against a hang); no assertion on timing."""
import threading

from resp_client import RawConn, parse
from test_multi_concurrency import run_threads

WORKERS = 4
PRODUCERS = 4
PER_PRODUCER = 500
CONSUMERS = 12


def entries_of(reply):
    """[(id, fields)] of an XREADGROUP reply (RESP2), or []."""
    if reply is None:
        return []
    out = []
    for _key, entries in reply:
        out += [(e[0], e[1]) for e in entries]
    return out


def test_each_entry_delivered_once(fresh_skein):
    srv = fresh_skein(workers=WORKERS)
    c = RawConn(srv.port)
    assert c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == b"+OK\r\n"
    total = PRODUCERS * PER_PRODUCER
    delivered = {}
    lock = threading.Lock()
    produced = threading.Event()
    counts = {"acked": 0}

    def producer(p):
        conn = RawConn(srv.port)
        for i in range(PER_PRODUCER):
            r = conn.call("XADD", "s", "*", "p", str(p), "i", str(i))
            assert r.startswith(b"$"), r

    def consumer(n):
        conn = RawConn(srv.port)
        name = "c%d" % n
        idle_rounds = 0
        while True:
            args = ["XREADGROUP", "GROUP", "g", name, "COUNT", str(1 + n % 7)]
            if n % 3 == 0:
                args += ["BLOCK", "50"]
            got = entries_of(parse(conn.call(*args + ["STREAMS", "s", ">"])))
            if not got:
                if produced.is_set():
                    idle_rounds += 1
                    if idle_rounds > 3:
                        return
                continue
            idle_rounds = 0
            with lock:
                for eid, fields in got:
                    assert eid not in delivered, (eid, delivered.get(eid), name)
                    delivered[eid] = (name, tuple(fields))
            acked = parse(conn.call("XACK", "s", "g", *[e for e, _ in got]))
            # Everything it just got is pending for it, unless the claimer took it.
            assert 0 <= acked <= len(got), (acked, got)
            with lock:
                counts["acked"] += acked

    def claimer():
        conn = RawConn(srv.port)
        for _ in range(200):
            r = parse(conn.call("XAUTOCLAIM", "s", "g", "claimer", "0", "0", "COUNT", "5", "JUSTID"))
            assert isinstance(r, list) and len(r) == 3, r
            if r[1]:
                acked = parse(conn.call("XACK", "s", "g", *r[1]))
                with lock:
                    counts["acked"] += acked

    def producers_then_flag():
        run_threads([lambda p=p: producer(p) for p in range(PRODUCERS)])
        produced.set()

    run_threads([producers_then_flag, claimer] + [lambda n=n: consumer(n) for n in range(CONSUMERS)])

    assert parse(c.call("XLEN", "s")) == total
    assert len(delivered) == total, (len(delivered), total)
    ids = [e[0] for e in parse(c.call("XRANGE", "s", "-", "+"))]
    assert sorted(delivered) == sorted(ids)
    per_producer = {}
    for _name, fields in delivered.values():
        per_producer.setdefault(fields[1], set()).add(fields[3])
    assert all(len(v) == PER_PRODUCER for v in per_producer.values()), per_producer.keys()
    assert counts["acked"] == total, counts
    summary = parse(c.call("XPENDING", "s", "g"))
    assert summary[0] == 0, summary
    groups = parse(c.call("XINFO", "GROUPS", "s"))
    info = dict(zip(groups[0][::2], groups[0][1::2]))
    last = parse(c.call("XINFO", "STREAM", "s"))
    last = dict(zip(last[::2], last[1::2]))
    assert info[b"pending"] == 0 and info[b"lag"] == 0, info
    assert info[b"last-delivered-id"] == last[b"last-generated-id"], (info, last)
    assert info[b"entries-read"] == total, info
    for cinfo in parse(c.call("XINFO", "CONSUMERS", "s", "g")):
        cinfo = dict(zip(cinfo[::2], cinfo[1::2]))
        assert cinfo[b"pending"] == 0, cinfo
