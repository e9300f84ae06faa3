"""The active expiry cycle passes over a shard another command holds (issue 20): while a
long SUNIONSTORE runs on the offload pool, holding the shard of a source set that has a
TTL, the cron thread skips that shard after one wait slice and goes on expiring keys
elsewhere (here in db 1), instead of waiting for the SUNIONSTORE to end.

Skein runs with one worker and `hz 100`. Nothing asserts a duration: the test sees db 1's
keys expire (DBSIZE, read without locking any shard) and then the SUNIONSTORE's shard
still held (an inline SCAN of db 0 stops at it), retrying a few times in case the
SUNIONSTORE ends first.
"""
import select

from resp_client import RawConn, parse
from test_walk_wait import held_by_pool, threads_info
from test_walk_wait import load as walk_wait_load

MEMBERS = 160000
KEYS = 50
ATTEMPTS = 6


def load(port):
    walk_wait_load(port, MEMBERS)
    c = RawConn(port)
    try:
        c.call("CONFIG", "SET", "hz", "100")
        # s1's shard has a key with a TTL: the expiry cycle visits it.
        assert parse(c.call("EXPIRE", "s1", "100000")) == 1
    finally:
        c.close()


def answered(conn):
    return bool(select.select([conn.sock], [], [], 0)[0])


def still_held(probe):
    """Is the SUNIONSTORE's shard still held? An inline SCAN of db 0 stops there (a
    non-zero cursor) only while it is: so db 1 was emptied before the shard was let go,
    not by a cycle that had waited for it."""
    probe.call("SELECT", "0")
    held = parse(probe.call("SCAN", "0", "COUNT", "1000"))[0] != b"0"
    probe.call("SELECT", "1")
    return held


def test_expiry_goes_on_beside_a_held_shard(fresh_skein):
    srv = fresh_skein(workers=1)
    load(srv.port)
    heavy, probe = RawConn(srv.port, timeout=60), RawConn(srv.port, timeout=60)
    try:
        probe.call("SELECT", "1")
        seen = False
        for _ in range(ATTEMPTS):
            probe.call("FLUSHDB")
            before = threads_info(probe)[0]
            heavy.send_raw(b"*4\r\n$11\r\nSUNIONSTORE\r\n$3\r\ndst\r\n$2\r\ns1\r\n$2\r\ns2\r\n")
            # SCAN runs on db 1 here; the SUNIONSTORE's shards are in db 0.
            probe.call("SELECT", "0")
            held = held_by_pool(probe, before)
            probe.call("SELECT", "1")
            if held:
                for i in range(KEYS):
                    probe.call("SET", "k%d" % i, "v", "PX", "1")
                while not answered(heavy):
                    if parse(probe.call("DBSIZE")) == 0:
                        seen = still_held(probe)
                        break
            assert parse(heavy.read_reply()) == MEMBERS + MEMBERS // 2
            if seen:
                break
        assert seen, "db 1's keys never expired while the SUNIONSTORE held its shard"
        # The held shard was swept later: s1 still there with its TTL.
        probe.call("SELECT", "0")
        assert parse(probe.call("TTL", "s1")) > 0
    finally:
        heavy.close()
        probe.close()
