"""HSCAN over a hash table that grows and shrinks during the iteration (on both servers):
every field present for the whole iteration is returned at least once, a call returns
about COUNT fields (its cost follows COUNT, not the hash's size), and MATCH filters."""
import random

import pytest

from resp_client import RawConn, parse


@pytest.mark.parametrize("server", ["redis", "skein"])
def test_hscan_survives_resizing(server, redis_server, skein_server):
    port = redis_server.port if server == "redis" else skein_server.port
    conn = RawConn(port)
    rnd = random.Random(11)
    key = "scanned"
    try:
        conn.call("DEL", key)
        stable = [b"s%d" % i for i in range(3000)]
        for lo in range(0, len(stable), 500):
            args = []
            for f in stable[lo:lo + 500]:
                args += [f, b"v"]
            conn.call("HSET", key, *args)
        assert conn.call("OBJECT", "ENCODING", key) == b"$9\r\nhashtable\r\n"
        cursor, seen, calls, extra = b"0", set(), 0, 0
        while True:
            cursor, items = parse(conn.call("HSCAN", key, cursor, "COUNT", "40"))
            fields = items[0::2]
            assert len(fields) <= 200
            seen.update(fields)
            calls += 1
            # Grow a lot, or shrink back, between calls.
            if rnd.random() < 0.2:
                n = rnd.choice([100, 5000])
                args = []
                for i in range(extra, extra + n):
                    args += [b"e%d" % i, b"x"]
                conn.call("HSET", key, *args)
                extra += n
            elif rnd.random() < 0.2 and extra:
                conn.call("HDEL", key, *[b"e%d" % i for i in range(extra)])
                extra = 0
            if cursor == b"0":
                break
        assert set(stable) <= seen
        assert calls > 3000 / 40 / 2
        # MATCH filters fields, all of them found across the iteration.
        cursor, found = b"0", set()
        while True:
            cursor, items = parse(conn.call("HSCAN", key, cursor, "MATCH", "s1*", "COUNT", "100"))
            found.update(items[0::2])
            if cursor == b"0":
                break
        assert found == {f for f in stable if f.startswith(b"s1")}
    finally:
        conn.call("DEL", key)
        conn.close()
