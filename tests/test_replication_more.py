"""Replication details beside tests/test_replication.py, each compared with
redis-server 7.0.15 in the same topology: a replica's keys past their TTL (hidden on
reads, deleted only by the master's DEL), and the same while clients are paused."""
import time

from resp_client import RawConn, parse
from test_replication import caught_up, follower, info, replica_of, wait_for

ZERO_DIGEST = b"0" * 40


def replica_view(c, key):
    """What a client of `c` sees of `key` (and of the whole database) without writing."""
    return {
        "get": c.call("GET", key),
        "exists": c.call("EXISTS", key),
        "ttl": c.call("TTL", key),
        "type": c.call("TYPE", key),
        "dbsize": c.call("DBSIZE"),
        "keys": sorted(parse(c.call("KEYS", "*"))),
        "scan": sorted(parse(c.call("SCAN", "0", "COUNT", "100"))[1]),
        "randomkey": c.call("RANDOMKEY"),
        "digest-value": parse(c.call("DEBUG", "DIGEST-VALUE", key)),
        "digest": c.call("DEBUG", "DIGEST"),
        "keyspace": info(c, "keyspace").get("db0"),
        "expired_keys": info(c, "stats")["expired_keys"],
    }


def test_replica_hides_expired_keys_until_the_masters_del(fresh_redis, fresh_skein):
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
    mc = RawConn(red.port)
    # The master deletes the key only when it meets it, so the replicas see it expired
    # and not yet deleted for as long as the test likes.
    assert mc.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    mc.call("SET", "plain", "p")
    mc.call("SET", "k", "v")
    mc.call("PEXPIRE", "k", "300")
    _, sc = follower(fresh_skein, red)
    _, rc = replica_of(fresh_redis, red)
    caught_up(mc, sc)
    caught_up(mc, rc)
    time.sleep(0.5)
    want = replica_view(rc, "k")
    assert want["get"] == b"$-1\r\n" and want["digest-value"] != [ZERO_DIGEST]
    assert replica_view(sc, "k") == want
    # DEBUG OBJECT finds it too, on both.
    assert sc.call("DEBUG", "OBJECT", "k").startswith(b"+Value at:")
    assert rc.call("DEBUG", "OBJECT", "k").startswith(b"+Value at:")
    # The master meets it: its DEL deletes it on the replicas (a DEL, not an expiry).
    assert mc.call("GET", "k") == b"$-1\r\n"
    caught_up(mc, sc)
    caught_up(mc, rc)
    want = replica_view(rc, "k")
    assert want["digest-value"] == [ZERO_DIGEST] and want["dbsize"] == b":1\r\n"
    assert replica_view(sc, "k") == want


def test_paused_clients_hide_expired_keys(fresh_redis, fresh_skein):
    """While clients are paused (CLIENT PAUSE WRITE) a key past its TTL reads as gone and
    stays in place (no DEL propagated to the replica); after CLIENT UNPAUSE it is deleted."""
    views = []
    for start in (lambda: fresh_redis(extra=["--repl-diskless-sync-delay", "0"]),
                  lambda: fresh_skein(workers=2)):
        m = start()
        mc = RawConn(m.port)
        mc.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        mc.call("SET", "plain", "p")
        mc.call("SET", "k", "v", "PX", "200")
        _, rc = replica_of(fresh_redis, m)
        caught_up(mc, rc)
        time.sleep(0.4)
        assert mc.call("CLIENT", "PAUSE", "60000", "WRITE") == b"+OK\r\n"
        offset = info(mc)["master_repl_offset"]
        seen = replica_view(mc, "k")
        seen["offset-moved"] = info(mc)["master_repl_offset"] != offset
        seen["replica-digest-value"] = parse(rc.call("DEBUG", "DIGEST-VALUE", "k"))
        assert mc.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
        seen["after"] = (mc.call("GET", "k"), mc.call("DBSIZE"),
                         info(mc, "stats")["expired_keys"])
        caught_up(mc, rc)
        seen["replica-after"] = rc.call("DBSIZE")
        views.append(seen)
        rc.close()
        mc.close()
    red, sk = views
    assert red["get"] == b"$-1\r\n" and red["dbsize"] == b":2\r\n"
    assert not red["offset-moved"]
    assert sk == red
