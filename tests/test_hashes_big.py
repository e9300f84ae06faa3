"""A big hash: 10,000,000 fields built with pipelined HSET batches, then read back in part
(HLEN, HGET, HMGET, HEXISTS, HSTRLEN, HRANDFIELD, an HSCAN window, HINCRBY, HDEL) while
another client's PINGs keep being answered.

Cost: the most expensive hash test: about 250 MB of requests and under 1 GB of server
memory; with a debug build some tens of seconds on 2 cores. It asserts no timings."""

from pinger import Pinger
from resp_client import RawConn, parse

N = 10_000_000
PAIRS_PER_HSET = 2_000
HSETS_PER_ROUND = 10


def hset_rounds(key):
    """Pipelined rounds of HSET commands: field f<i>, value <i>."""
    per_round = PAIRS_PER_HSET * HSETS_PER_ROUND
    head = b"$4\r\nHSET\r\n$%d\r\n%s\r\n" % (len(key), key)
    for start in range(0, N, per_round):
        cmds = []
        for lo in range(start, min(start + per_round, N), PAIRS_PER_HSET):
            hi = min(lo + PAIRS_PER_HSET, N)
            body = b"".join(b"$%d\r\nf%d\r\n$%d\r\n%d\r\n" % (len(b"%d" % i) + 1, i,
                                                             len(b"%d" % i), i)
                            for i in range(lo, hi))
            cmds.append(b"*%d\r\n" % (2 * (hi - lo) + 2) + head + body)
        yield cmds




def test_ten_million_field_hash(skein_server):
    key = b"bighash"
    conn = RawConn(skein_server.port, timeout=300)
    pinger = Pinger(skein_server.port)
    pinger.start()
    try:
        created = 0
        for cmds in hset_rounds(key):
            conn.send_raw(b"".join(cmds))
            created += sum(parse(conn.read_reply()) for _ in cmds)
        assert created == N
        assert conn.call("HLEN", key) == b":%d\r\n" % N
        assert conn.call("OBJECT", "ENCODING", key) == b"$9\r\nhashtable\r\n"
        assert conn.call("HGET", key, "f9999999") == b"$7\r\n9999999\r\n"
        assert conn.call("HGET", key, "f10000000") == b"$-1\r\n"
        assert parse(conn.call("HMGET", key, "f0", "nope", "f5000000")) == [b"0", None,
                                                                           b"5000000"]
        assert conn.call("HEXISTS", key, "f1234567") == b":1\r\n"
        assert conn.call("HSTRLEN", key, "f1234567") == b":7\r\n"
        sample = parse(conn.call("HRANDFIELD", key, "1000", "WITHVALUES"))
        fields = sample[0::2]
        assert len(set(fields)) == 1000
        assert all(f == b"f" + v for f, v in zip(fields, sample[1::2]))
        assert len(parse(conn.call("HRANDFIELD", key, "-1000"))) == 1000
        cursor, seen = b"0", {}
        for _ in range(20):
            cursor, items = parse(conn.call("HSCAN", key, cursor, "COUNT", "1000"))
            seen.update(zip(items[0::2], items[1::2]))
            assert cursor != b"0"
        assert len(seen) >= 20 * 1000 * 0.9
        assert all(f == b"f" + v for f, v in seen.items())
        assert conn.call("HINCRBY", key, "f42", "8") == b":50\r\n"
        assert conn.call("HDEL", key, *list(seen)[:100]) == b":100\r\n"
        assert conn.call("HLEN", key) == b":%d\r\n" % (N - 100)
        assert conn.call("DEL", key) == b":1\r\n"
    finally:
        pinger.stop.set()
        pinger.join()
        conn.close()
    # The other client was served throughout (counted, not timed).
    assert not pinger.bad
    assert pinger.pongs > 0
