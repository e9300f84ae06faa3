"""Replication details beside tests/test_replication.py, each compared with
redis-server 7.0.15 in the same topology: a replica's keys past their TTL (hidden on
reads, deleted only by the master's DEL), and the same while clients are paused."""
import os
import time

from resp_client import RawConn, parse
from test_replication import caught_up, follower, info, replica_of, wait_for

ZERO_DIGEST = b"0" * 40


def masters_with_a_replica(fresh_redis, fresh_skein, setup):
    """A redis-server master, then a Skein one, each set up by `setup(conn)` and with a
    redis-server replica caught up: yields (master conn, replica conn) for each."""
    for start in (lambda: fresh_redis(extra=["--repl-diskless-sync-delay", "0"]),
                  lambda: fresh_skein(workers=2)):
        m = start()
        mc = RawConn(m.port)
        setup(mc)
        _, rc = replica_of(fresh_redis, m)
        caught_up(mc, rc)
        yield mc, rc
        rc.close()
        mc.close()


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

    def setup(mc):
        mc.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        mc.call("SET", "plain", "p")
        mc.call("SET", "k", "v", "PX", "200")

    for mc, rc in masters_with_a_replica(fresh_redis, fresh_skein, setup):
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
    red, sk = views
    assert red["get"] == b"$-1\r\n" and red["dbsize"] == b":2\r\n"
    assert not red["offset-moved"]
    assert sk == red


def client_lines(c, kind=None):
    """CLIENT LIST (of one TYPE) as a list of {field: value}."""
    args = ["CLIENT", "LIST"] + (["TYPE", kind] if kind else [])
    text = parse(c.call(*args)).decode()
    return [dict(f.split("=", 1) for f in line.split(" ")) for line in text.splitlines()]


def link_client_view(c, kind):
    """What a comparison can rely on of the link's client (not ids, ages, buffers)."""
    lines = client_lines(c, kind)
    return {
        "count": len(lines),
        "fields": [list(line) for line in lines],
        "flags": [line["flags"] for line in lines],
        "user": [line["user"] for line in lines],
        "db": [line["db"] for line in lines],
        "connected_clients": info(c, "clients")["connected_clients"],
        "all_flags": sorted(line["flags"] for line in client_lines(c)),
    }


def test_master_link_is_a_client_of_the_replica(fresh_redis, fresh_skein):
    """The replica lists its master's link with flag M, counts it in connected_clients,
    and CLIENT KILL (TYPE master, or its ID) drops it until the link is made again."""
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
    mc = RawConn(red.port)
    sk, sc = follower(fresh_skein, red)
    _, rc = replica_of(fresh_redis, red)
    mc.call("SET", "k", "v")
    caught_up(mc, sc)
    caught_up(mc, rc)
    want = link_client_view(rc, "master")
    assert want["flags"] == ["M"] and want["connected_clients"] == "2"
    assert link_client_view(sc, "master") == want
    line = client_lines(sc, "master")[0]
    assert line["addr"] == f"127.0.0.1:{red.port}" and line["cmd"] in ("set", "ping")
    assert len(client_lines(sc, "normal")) == 1
    ids = [client_lines(c, "master")[0]["id"] for c in (sc, rc)]
    assert sc.call("CLIENT", "KILL", "TYPE", "master") == \
        rc.call("CLIENT", "KILL", "TYPE", "master") == b":1\r\n"
    for c in (sc, rc):
        wait_for(lambda: info(c)["master_link_status"] == "up"
                 and len(client_lines(c, "master")) == 1, "the link to come back")
    assert [client_lines(c, "master")[0]["id"] for c in (sc, rc)] == ids
    # By its ID too.
    master_id = client_lines(sc, "master")[0]["id"]
    assert sc.call("CLIENT", "KILL", "ID", master_id) == b":1\r\n"
    wait_for(lambda: info(sc)["master_link_status"] == "up"
             and len(client_lines(sc, "master")) == 1, "the link to come back")
    # A partial resync keeps the master's client (its id), as Redis's cached master.
    assert client_lines(sc, "master")[0]["id"] == master_id


def test_replicas_are_listed_by_the_master(fresh_redis, fresh_skein):
    """A master lists its replicas with flag S (CLIENT LIST, TYPE replica/slave) but
    leaves them out of connected_clients; CLIENT KILL TYPE replica drops them."""
    views = []
    for mc, rc in masters_with_a_replica(fresh_redis, fresh_skein,
                                         lambda mc: mc.call("SET", "k", "v")):
        seen = link_client_view(mc, "replica")
        seen["slave"] = len(client_lines(mc, "slave"))
        seen["normal"] = len(client_lines(mc, "normal"))
        seen["cmd"] = client_lines(mc, "replica")[0]["cmd"] in ("psync", "replconf")
        seen["killed"] = mc.call("CLIENT", "KILL", "TYPE", "replica")
        wait_for(lambda: info(rc)["master_link_status"] == "up"
                 and len(client_lines(mc, "replica")) == 1, "the replica to come back")
        seen["by-id"] = mc.call("CLIENT", "KILL", "ID", client_lines(mc, "replica")[0]["id"])
        views.append(seen)
    red, sk = views
    assert red["flags"] == ["S"] and red["connected_clients"] == "1"
    assert red["killed"] == red["by-id"] == b":1\r\n"
    assert sk == red


def syncing_info(c):
    """INFO replication once `c` is part way through receiving its master's snapshot."""
    seen = {}

    def receiving():
        seen.clear()
        seen.update(info(c))
        return seen.get("master_sync_in_progress") == "1" \
            and int(seen.get("master_sync_read_bytes", "0")) > 0
    wait_for(receiving, "the snapshot to be part way")
    return dict(seen)


def test_master_sync_fields_while_a_snapshot_comes(fresh_redis, fresh_skein):
    """INFO replication's master_sync_* fields while a full sync's snapshot is received
    (a Redis master slowed with rdb-key-save-delay, its diskless `$EOF:` transfer shared
    by a Skein replica and a Redis one): the same fields in the same places, and values in
    Redis's ranges (an end-marked snapshot has no size: total 0, left negative)."""
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "1",
                             "--rdb-key-save-delay", "20000"])
    mc = RawConn(red.port)
    mc.pipeline([["SET", f"k{i}", "x" * 20000] for i in range(150)])
    replicaof = ["--replicaof", "127.0.0.1", str(red.port)]
    sc = RawConn(fresh_skein(extra=replicaof, workers=2).port)
    rc = RawConn(fresh_redis(extra=replicaof).port)
    sk, want = syncing_info(sc), syncing_info(rc)
    assert list(sk) == list(want)
    for seen in (sk, want):
        read = int(seen["master_sync_read_bytes"])
        assert seen["master_sync_total_bytes"] == "0"
        assert int(seen["master_sync_left_bytes"]) == -read
        assert seen["master_sync_perc"] == "0.00"
        assert 0 <= int(seen["master_sync_last_io_seconds_ago"]) < 60
    for c in (sc, rc):
        wait_for(lambda: info(c)["master_link_status"] == "up", "the sync to end")
        assert "master_sync_total_bytes" not in info(c)
    caught_up(mc, sc)
    assert parse(sc.call("DEBUG", "DIGEST")) == parse(mc.call("DEBUG", "DIGEST"))


def test_backlog_freed_after_repl_backlog_ttl(fresh_redis, fresh_skein):
    """repl-backlog-ttl: once a master has had no replica for that long it frees its
    backlog under a new replication ID (Redis's log line); a replica that comes later
    syncs in full and the backlog is back."""
    views = []
    for start in (lambda: fresh_redis(extra=["--repl-diskless-sync-delay", "0",
                                             "--repl-backlog-ttl", "1"]),
                  lambda: fresh_skein(extra=["--repl-backlog-ttl", "1"], workers=2)):
        m = start()
        mc = RawConn(m.port)
        mc.call("SET", "k", "v")
        r, rc = replica_of(fresh_redis, m)
        caught_up(mc, rc)
        before = info(mc)
        rc.close()
        r.stop()
        wait_for(lambda: info(mc)["repl_backlog_active"] == "0", "the backlog to be freed")
        after = info(mc)
        with open(os.path.join(m.dir, "server.log")) as f:
            logged = "Replication backlog freed after 1 seconds without connected replicas." in f.read()
        mc.call("SET", "k2", "v2")
        _, rc2 = replica_of(fresh_redis, m)
        caught_up(mc, rc2)
        views.append({
            "new-id": after["master_replid"] != before["master_replid"],
            "id2": after["master_replid2"],
            "logged": logged,
            "back": info(mc)["repl_backlog_active"],
            "synced": rc2.call("GET", "k2"),
        })
    red, sk = views
    assert red == {"new-id": True, "id2": "0" * 40, "logged": True, "back": "1",
                   "synced": b"$2\r\nv2\r\n"}
    assert sk == red


BUSY_THEN_INCR = """
local s = redis.call('TIME')
repeat
    local n = redis.call('TIME')
until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 600000
return redis.call('INCR', KEYS[1])
"""


def test_masters_stream_finds_replica_expired_keys_live(fresh_redis, fresh_skein):
    """A script's time stands still on the master, so its INCR of a key that expires
    while it runs reaches the replicas after the key's TTL: their master's stream finds
    the key live (Redis's expireIfNeeded for the master client), INCRs it and keeps its
    TTL, where a replica deleting it would make a new key without one."""
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
    mc = RawConn(red.port)
    assert mc.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    _, sc = follower(fresh_skein, red)
    _, rc = replica_of(fresh_redis, red)
    mc.call("SET", "k", "5", "PX", "300")
    assert mc.call("EVAL", BUSY_THEN_INCR, "1", "k") == b":6\r\n"
    caught_up(mc, sc)
    caught_up(mc, rc)
    want = parse(rc.call("DEBUG", "DIGEST-VALUE", "k"))
    assert want != [ZERO_DIGEST]
    assert parse(sc.call("DEBUG", "DIGEST-VALUE", "k")) == want
    assert parse(mc.call("DEBUG", "DIGEST-VALUE", "k")) == want
    assert sc.call("GET", "k") == rc.call("GET", "k") == b"$-1\r\n"
    assert info(sc, "stats")["expired_keys"] == info(rc, "stats")["expired_keys"] == "0"
