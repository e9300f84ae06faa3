"""A big sorted set: 10,000,000 members built with pipelined ZADD batches (a skiplist),
then read back in part (ZCARD, ZSCORE, ZRANK, ZRANGE windows by rank and score, ZCOUNT,
ZRANDMEMBER, a ZSCAN window, ZPOPMIN/ZPOPMAX) while another client's PINGs keep being
answered. Also: a ZSCAN over a changing skiplist returns every member present throughout.

Cost: the most expensive sorted-set test: about 250 MB of requests and under 1 GB of
server memory; with a debug build some tens of seconds on 2 cores. It asserts no timings."""
import random

from pinger import Pinger
from resp_client import RawConn, parse

N = 10_000_000
PER_COMMAND = 5_000      # members per ZADD
PIPELINE = 20            # ZADDs in flight per round trip


def zadd_batches(key):
    """Member i (decimal) with score i // 2 (pairs of equal scores)."""
    step = PER_COMMAND * PIPELINE
    for start in range(0, N, step):
        chunks = []
        for lo in range(start, min(start + step, N), PER_COMMAND):
            hi = min(lo + PER_COMMAND, N)
            parts = [b"*%d\r\n$4\r\nZADD\r\n$%d\r\n%s\r\n" % (2 * (hi - lo) + 2, len(key), key)]
            for i in range(lo, hi):
                m = b"%d" % i
                s = b"%d" % (i // 2)
                parts.append(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(s), s, len(m), m))
            chunks.append(b"".join(parts))
        yield chunks




def test_ten_million_member_zset(skein_server):
    key = b"bigzset"
    conn = RawConn(skein_server.port, timeout=300)
    pinger = Pinger(skein_server.port)
    pinger.start()
    try:
        added = 0
        for chunks in zadd_batches(key):
            conn.send_raw(b"".join(chunks))
            for _ in chunks:
                added += parse(conn.read_reply())
        assert added == N
        before = pinger.pongs
        assert conn.call("ZCARD", key) == b":%d\r\n" % N
        assert conn.call("OBJECT", "ENCODING", key) == b"$8\r\nskiplist\r\n"
        assert parse(conn.call("ZSCORE", key, "9999999")) == b"4999999"
        assert conn.call("ZSCORE", key, "10000000") == b"$-1\r\n"
        assert conn.call("ZRANK", key, "5000001") == b":5000001\r\n"
        assert conn.call("ZREVRANK", key, "0") == b":%d\r\n" % (N - 1)
        assert parse(conn.call("ZRANGE", key, "7000000", "7000003")) == \
            [b"7000000", b"7000001", b"7000002", b"7000003"]
        assert parse(conn.call("ZRANGE", key, "-2", "-1", "WITHSCORES")) == \
            [b"9999998", b"4999999", b"9999999", b"4999999"]
        assert parse(conn.call("ZRANGEBYSCORE", key, "(2500000", "2500001", "WITHSCORES")) == \
            [b"5000002", b"2500001", b"5000003", b"2500001"]
        assert parse(conn.call("ZRANGE", key, "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "3", "2")) == \
            [b"9999996", b"9999995"]
        assert conn.call("ZCOUNT", key, "1000", "(2000") == b":2000\r\n"
        sample = parse(conn.call("ZRANDMEMBER", key, "1000"))
        assert len(set(sample)) == 1000 and all(0 <= int(m) < N for m in sample)
        cursor, seen = b"0", set()
        for _ in range(20):
            cursor, items = parse(conn.call("ZSCAN", key, cursor, "COUNT", "1000"))
            seen.update(items[::2])
            assert cursor != b"0"
        assert len(seen) >= 20 * 1000 * 0.9
        assert parse(conn.call("ZPOPMIN", key, "3")) == \
            [b"0", b"0", b"1", b"0", b"2", b"1"]
        assert parse(conn.call("ZPOPMAX", key)) == [b"9999999", b"4999999"]
        assert conn.call("ZCARD", key) == b":%d\r\n" % (N - 4)
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


def test_zscan_returns_every_member_present_throughout(skein_server):
    """Members present for the whole iteration come back at least once while others are
    added and removed between calls (the index grows and shrinks under the cursor)."""
    conn = RawConn(skein_server.port)
    rnd = random.Random(3)
    try:
        conn.call("DEL", "sc")
        stable = [b"s%d" % i for i in range(3000)]
        for i in range(0, len(stable), 500):
            args = []
            for m in stable[i:i + 500]:
                args += [str(rnd.randrange(2, 100)), m]
            conn.call("ZADD", "sc", *args)
        cursor, seen, calls = b"0", set(), 0
        extra = 0
        while True:
            cursor, items = parse(conn.call("ZSCAN", "sc", cursor, "COUNT", "20"))
            calls += 1
            assert len(items) // 2 <= 200  # bounded by COUNT, not by the set's size
            seen.update(items[::2])
            # Churn: grow by thousands, then shrink back; change stable members' scores.
            if calls % 10 < 5:
                args = []
                for _ in range(400):
                    args += ["1", "t%d" % extra]
                    extra += 1
                conn.call("ZADD", "sc", *args)
            else:
                conn.call("ZREMRANGEBYSCORE", "sc", "1", "1")  # only the churn scores 1
            conn.call("ZINCRBY", "sc", "1000", rnd.choice(stable))
            if cursor == b"0":
                break
        assert set(stable) <= seen
    finally:
        conn.call("DEL", "sc")
        conn.close()
