"""SSCAN on a hash-table set while it changes: every member present for the whole
iteration is returned at least once, whatever is added or removed between calls, and each
call returns about COUNT members (work per call bounded by COUNT, not by the set's size).
Intsets answer everything in one call with cursor 0, as Redis does."""
import random

from resp_client import RawConn, parse


def test_sscan_survives_changes(skein_server):
    c = RawConn(skein_server.port)
    rnd = random.Random(11)
    try:
        c.call("DEL", "sc")
        members = [b"m:%d" % i for i in range(5000)]
        c.call("SADD", "sc", *members)
        kept = set(members[::3])
        removable = [m for m in members if m not in kept]
        rnd.shuffle(removable)
        seen, cursor, calls, added = set(), b"0", 0, 0
        while True:
            cursor, items = parse(c.call("SSCAN", "sc", cursor, "COUNT", "50"))
            assert len(items) <= 4 * 50  # about COUNT (Redis may return a few more)
            seen.update(items)
            calls += 1
            # Between calls: remove some members that are not kept, add new ones.
            for _ in range(rnd.randrange(0, 40)):
                if removable:
                    c.call("SREM", "sc", removable.pop())
            new = [b"new:%d" % (added + i) for i in range(rnd.randrange(0, 40))]
            added += len(new)
            if new:
                c.call("SADD", "sc", *new)
            if cursor == b"0":
                break
            assert calls < 10000
        assert kept <= seen
        # A whole set shrinking to almost nothing mid-iteration.
        cursor, items = parse(c.call("SSCAN", "sc", "0", "COUNT", "100"))
        everything = parse(c.call("SMEMBERS", "sc"))
        survivors = set(everything[:10])
        c.call("SREM", "sc", *[m for m in everything if m not in survivors])
        seen = set(items)
        while cursor != b"0":
            cursor, items = parse(c.call("SSCAN", "sc", cursor, "COUNT", "100"))
            seen.update(items)
        assert survivors <= seen
        # MATCH filters what a call visited; COUNT still bounds the visit.
        c.call("DEL", "sc")
        c.call("SADD", "sc", *[b"a:%d" % i for i in range(1000)], *[b"b:%d" % i for i in range(1000)])
        cursor, got = b"0", []
        while True:
            cursor, items = parse(c.call("SSCAN", "sc", cursor, "MATCH", "a:*", "COUNT", "30"))
            assert len(items) <= 4 * 30
            got += items
            if cursor == b"0":
                break
        assert sorted(got) == sorted(b"a:%d" % i for i in range(1000))
        # An intset: one call, cursor 0, whatever the cursor and COUNT.
        c.call("DEL", "si")
        c.call("SADD", "si", *range(100))
        for cur in ("0", "7", "123456"):
            cursor, items = parse(c.call("SSCAN", "si", cur, "COUNT", "5"))
            assert cursor == b"0" and len(items) == 100
    finally:
        c.call("DEL", "sc", "si")
        c.close()
