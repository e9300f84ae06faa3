"""A big set: 10,000,000 members built with pipelined SADD batches, then read back in part
(SCARD, SISMEMBER, SMISMEMBER, SRANDMEMBER, an SSCAN window, SPOP) while another client's
PINGs keep being answered.

Cost: the most expensive set test: about 150 MB of requests and a few hundred MB of server
memory; with a debug build some tens of seconds on 2 cores. It asserts no timings."""

from pinger import Pinger
from resp_client import RawConn, parse

N = 10_000_000
PER_COMMAND = 5_000      # members per SADD
PIPELINE = 20            # SADDs in flight per round trip


def sadd_batches(key):
    step = PER_COMMAND * PIPELINE
    for start in range(0, N, step):
        chunks = []
        for lo in range(start, min(start + step, N), PER_COMMAND):
            hi = min(lo + PER_COMMAND, N)
            parts = [b"*%d\r\n$4\r\nSADD\r\n$%d\r\n%s\r\n" % (hi - lo + 2, len(key), key)]
            parts += [b"$%d\r\n%d\r\n" % (len(b"%d" % i), i) for i in range(lo, hi)]
            chunks.append(b"".join(parts))
        yield chunks




def test_ten_million_member_set(skein_server):
    key = b"bigset"
    conn = RawConn(skein_server.port, timeout=300)
    pinger = Pinger(skein_server.port)
    pinger.start()
    try:
        added = 0
        for chunks in sadd_batches(key):
            conn.send_raw(b"".join(chunks))
            for _ in chunks:
                added += parse(conn.read_reply())
        assert added == N
        before = pinger.pongs
        assert conn.call("SCARD", key) == b":%d\r\n" % N
        assert conn.call("OBJECT", "ENCODING", key) == b"$9\r\nhashtable\r\n"
        assert conn.call("SISMEMBER", key, "9999999") == b":1\r\n"
        assert conn.call("SISMEMBER", key, "10000000") == b":0\r\n"
        assert parse(conn.call("SMISMEMBER", key, "0", "-1", "5000000")) == [1, 0, 1]
        sample = parse(conn.call("SRANDMEMBER", key, "1000"))
        assert len(set(sample)) == 1000 and all(0 <= int(m) < N for m in sample)
        assert len(parse(conn.call("SRANDMEMBER", key, "-1000"))) == 1000
        cursor, seen = b"0", set()
        for _ in range(20):
            cursor, items = parse(conn.call("SSCAN", key, cursor, "COUNT", "1000"))
            seen.update(items)
            assert cursor != b"0"
        assert len(seen) >= 20 * 1000 * 0.9
        popped = parse(conn.call("SPOP", key, "100"))
        assert len(set(popped)) == 100
        assert conn.call("SCARD", key) == b":%d\r\n" % (N - 100)
        assert parse(conn.call("SMISMEMBER", key, *popped)) == [0] * 100
        assert conn.call("DEL", key) == b":1\r\n"
        assert conn.call("EXISTS", key) == b":0\r\n"
        assert before >= 1  # PINGs were answered while the set was built
        pinger.stop_after_pong_since(before)  # and still are served
        assert not pinger.bad
        assert pinger.pongs > before
    finally:
        pinger.stop.set()
        conn.call("DEL", key)
        conn.close()
