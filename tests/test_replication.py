"""Replication, Skein as the master: an unchanged redis-server 7.0.15 started with
`--replicaof` at Skein syncs (a full resync over the `$EOF:` framing, then the command
stream), follows writes from several connections in several databases, continues after a
dropped link with a partial resync from the backlog, and ends with the same dataset
(DEBUG DIGEST, which Skein computes as Redis does). REPLCONF/PSYNC/SYNC/ROLE answer as
Redis's do."""
import os
import threading
import time

import pytest

from resp_client import RawConn, parse


def info(conn, section="replication"):
    text = parse(conn.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def wait_for(cond, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def replica_of(fresh_redis, master):
    r = fresh_redis(extra=["--replicaof", "127.0.0.1", str(master.port)])
    rc = RawConn(r.port)
    wait_for(lambda: info(rc)["master_link_status"] == "up", "the link to come up")
    return r, rc


def caught_up(mc, rc):
    """The replica has processed everything the master has fed it so far."""
    def done():
        m = info(mc)
        return m["master_repl_offset"] == info(rc)["slave_repl_offset"]
    wait_for(done, "the replica to catch up")


def preload(c):
    """Values of every type and encoding in databases 0 and 3."""
    for db in (0, 3):
        c.call("SELECT", str(db))
        c.pipeline([["SET", f"s{i}", f"v{i}"] for i in range(300)])
        c.call("SET", "n", "12345")
        c.call("HSET", "small", "a", "1", "b", "2")
        c.call("HSET", "big", *[x for i in range(300) for x in (f"f{i}", f"v{i}")])
        c.call("RPUSH", "list", *range(200))
        c.call("SADD", "ints", *range(50))
        c.call("SADD", "strs", *[f"m{i}" for i in range(300)])
        c.call("ZADD", "z", *[x for i in range(200) for x in (str(i * 1.5), f"m{i}")])
        c.call("XADD", "st", "1-1", "a", "1")
        c.call("XGROUP", "CREATE", "st", "g", "0")
        c.call("SET", "ttl", "x", "PX", "100000000")
        c.call("PFADD", "hll", "a", "b", "c")
    c.call("SELECT", "0")


def workload(port, tag, rounds):
    """Writes of many kinds from one connection; the propagated forms (absolute expiry
    times, XADD's generated IDs, SPOP's SREM, MULTI/EXEC, scripts' effects) must give the
    replica the master's data."""
    c = RawConn(port)
    for i in range(rounds):
        db = str(i % 3 * 3)  # 0, 3, 6
        c.call("SELECT", db)
        c.pipeline([
            ["SET", f"{tag}:{i}", i],
            ["INCR", f"{tag}:ctr"],
            ["INCRBYFLOAT", f"{tag}:f", "0.1"],
            ["EXPIRE", f"{tag}:{i}", "1000"],
            ["LPUSH", f"{tag}:l", i],
            ["RPOPLPUSH", f"{tag}:l", f"{tag}:l2"],
            ["HINCRBY", f"{tag}:h", f"f{i % 7}", 3],
            ["SADD", f"{tag}:s", *range(i % 10)],
            ["SPOP", f"{tag}:s"],
            ["ZINCRBY", f"{tag}:z", 2, f"m{i % 5}"],
            ["XADD", f"{tag}:x", "*", "i", i],
            ["SETEX", f"{tag}:e{i}", "100", "v"],
            ["DEL", f"{tag}:{i - 5}"],
            ["MULTI"], ["SET", f"{tag}:m", i], ["APPEND", f"{tag}:m", "!"], ["EXEC"],
            ["EVAL", "redis.call('SET', KEYS[1], ARGV[1]) "
                     "return redis.call('INCR', KEYS[2])", 2, f"{tag}:lua", f"{tag}:lc", i],
        ])
    c.close()


def busy_writes(port, mc, rounds):
    """The workload from three connections at once, then SWAPDB and a FLUSHDB (leaving
    `mc` in database 3)."""
    threads = [threading.Thread(target=workload, args=(port, f"t{n}", rounds))
               for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mc.call("SWAPDB", "0", "6")
    mc.call("SELECT", "3")
    mc.call("FLUSHDB")


def test_redis_replica_follows_skein(fresh_skein, fresh_redis):
    sk = fresh_skein(workers=2)
    mc = RawConn(sk.port)
    preload(mc)
    r, rc = replica_of(fresh_redis, sk)
    busy_writes(sk.port, mc, 60)
    caught_up(mc, rc)
    same_data(mc, rc)
    for db in range(7):
        assert rc.call("SELECT", str(db)) == mc.call("SELECT", str(db)) == b"+OK\r\n"
        assert rc.call("DBSIZE") == mc.call("DBSIZE")
    # Its acknowledgements (once a second) reach the same offset.
    end = info(mc)["master_repl_offset"]
    wait_for(lambda: f",offset={end}," in info(mc)["slave0"], "the replica's ack")
    m = info(mc)
    assert m["connected_slaves"] == "1"
    assert m["repl_backlog_active"] == "1"
    assert m["master_replid"] == info(rc)["master_replid"]
    assert ",state=online," in m["slave0"]
    assert f"port={r.port}," in m["slave0"]
    assert parse(mc.call("ROLE")) == [b"master", int(m["master_repl_offset"]),
                                      [[b"127.0.0.1", str(r.port).encode(),
                                        m["master_repl_offset"].encode()]]]
    # A replica's connection is not a client's.
    assert info(mc, "clients")["connected_clients"] == "1"
    # PUBLISH reaches the replica's subscribers (it goes to the replicas, not the AOF).
    assert_published_through(mc, r.port)
    # WAIT: the one replica acknowledges this client's writes (REPLCONF GETACK asks it at
    # once); two are never reached, so the timeout answers with one.
    mc.call("SET", "waited", "1")
    assert mc.call("WAIT", "1", "0") == b":1\r\n"
    assert mc.call("WAIT", "2", "100") == b":1\r\n"
    assert rc.call("GET", "waited") == b"$1\r\n1\r\n"


def assert_published_through(mc, replica_port):
    """A message published on the master reaches a subscriber of the replica."""
    sub = RawConn(replica_port)
    assert parse(sub.call("SUBSCRIBE", "news")) == [b"subscribe", b"news", 1]
    deadline = time.time() + 10
    sub.sock.settimeout(0.2)
    while time.time() < deadline:
        mc.call("PUBLISH", "news", "hello")
        try:
            got = parse(sub.read_reply())
        except OSError:
            continue
        assert got == [b"message", b"news", b"hello"]
        break
    else:
        raise AssertionError("no message reached the replica's subscriber")
    sub.close()


def test_partial_resync_after_the_link_drops(fresh_skein, fresh_redis):
    sk = fresh_skein(workers=2)
    mc = RawConn(sk.port)
    preload(mc)
    r, rc = replica_of(fresh_redis, sk)
    workload(sk.port, "a", 20)
    caught_up(mc, rc)
    # The replica drops its link; writes go on meanwhile; it comes back with PSYNC.
    assert rc.call("CLIENT", "KILL", "TYPE", "master").startswith(b":")
    workload(sk.port, "b", 20)
    wait_for(lambda: info(rc)["master_link_status"] == "up", "the link to come back")
    workload(sk.port, "c", 5)
    caught_up(mc, rc)
    assert parse(rc.call("DEBUG", "DIGEST")) == parse(mc.call("DEBUG", "DIGEST"))
    with open(os.path.join(sk.dir, "server.log")) as f:
        log = f.read()
    assert "Partial resynchronization request from" in log, log
    with open(os.path.join(r.dir, "server.log")) as f:
        assert "Successful partial resynchronization with master." in f.read()


def test_replica_with_the_aof_on(fresh_skein, fresh_redis):
    """The AOF and the replicas read one stream: each gets every write once."""
    sk = fresh_skein(extra=["--appendonly", "yes"], workers=2)
    mc = RawConn(sk.port)
    preload(mc)
    r, rc = replica_of(fresh_redis, sk)
    workload(sk.port, "w", 30)
    caught_up(mc, rc)
    digest = parse(mc.call("DEBUG", "DIGEST"))
    assert parse(rc.call("DEBUG", "DIGEST")) == digest
    # The AOF alone rebuilds the same dataset; PUBLISH went to the replica, not to it.
    assert_published_through(mc, r.port)
    caught_up(mc, rc)
    aof_dir = os.path.join(sk.dir, "appendonlydir")
    for name in os.listdir(aof_dir):
        with open(os.path.join(aof_dir, name), "rb") as f:
            assert b"PUBLISH" not in f.read().upper(), name
    assert mc.call("DEBUG", "LOADAOF") == b"+OK\r\n"
    assert parse(mc.call("DEBUG", "DIGEST")) == digest


def read_rdb_reply(c):
    """After +FULLRESYNC or SYNC: keep-alive newlines, then `$<len>` and the RDB."""
    while True:
        c._need(1)
        if c.buf[:1] == b"\n":
            c.buf = c.buf[1:]
            continue
        break
    eol = c._line(0)
    assert c.buf[:1] == b"$", c.buf[:80]
    n = int(c.buf[1:eol])
    c._need(eol + 2 + n)
    rdb, c.buf = c.buf[eol + 2:eol + 2 + n], c.buf[eol + 2 + n:]
    return rdb


def replica_by_hand(port):
    """A replica made by hand (REPLCONF listening-port 7777, PSYNC ? -1): its connection,
    the +FULLRESYNC line and the snapshot read."""
    c = RawConn(port)
    assert c.call("REPLCONF", "listening-port", "7777") == b"+OK\r\n"
    c.send_raw(b"PSYNC ? -1\r\n")
    eol = c._line(0)
    line, c.buf = c.buf[:eol], c.buf[eol + 2:]
    return c, line, read_rdb_reply(c)


def test_psync_and_sync_by_hand(fresh_skein):
    """Without `capa eof` the snapshot comes as `$<length>` (through a file); then the
    stream, starting with a SELECT, at the offset +FULLRESYNC gave."""
    sk = fresh_skein(workers=2)
    mc = RawConn(sk.port)
    mc.call("SET", "before", "1")
    c, line, rdb = replica_by_hand(sk.port)
    word, replid, offset = line.split(b" ")
    assert word == b"+FULLRESYNC" and len(replid) == 40
    assert rdb.startswith(b"REDIS0010") and b"before" in rdb
    mc.call("SELECT", "2")
    mc.call("SET", "after", "2")
    assert c.read_reply() == b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n"
    assert c.read_reply() == b"*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n2\r\n"
    wait_for(lambda: ",state=online," in info(mc).get("slave0", ""), "the replica online")
    assert "port=7777," in info(mc)["slave0"]
    # REPLCONF ACK moves its offset; it gets no reply.
    end = int(info(mc)["master_repl_offset"])
    c.send_raw(b"REPLCONF ACK %d\r\n" % end)
    wait_for(lambda: f"offset={end}," in info(mc)["slave0"], "the ack")
    # The old SYNC: no +FULLRESYNC line.
    s = RawConn(sk.port)
    s.send_raw(b"SYNC\r\n")
    assert read_rdb_reply(s).startswith(b"REDIS0010")
    wait_for(lambda: info(mc)["connected_slaves"] == "2", "the second replica")
    # A replica that goes away leaves the list.
    c.close()
    s.close()
    wait_for(lambda: info(mc)["connected_slaves"] == "0", "the replicas to leave")
    # Back with PSYNC at an offset the backlog holds: +CONTINUE and what followed it.
    p = RawConn(sk.port)
    p.call("REPLCONF", "capa", "psync2")
    p.send_raw(b"PSYNC %s %d\r\n" % (replid, int(offset) + 1))
    eol = p._line(0)
    assert p.buf[:eol] == b"+CONTINUE " + replid
    p.buf = p.buf[eol + 2:]
    assert p.read_reply() == b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n"
    p.close()


def test_replconf_and_role_answer_as_redis(redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    cases = [
        ["REPLCONF", "listening-port"],
        ["REPLCONF", "listening-port", "abc"],
        ["REPLCONF", "listening-port", "6380", "capa", "eof", "capa", "psync2"],
        ["REPLCONF", "capa", "whatever"],
        ["REPLCONF", "nosuch", "1"],
        ["REPLCONF", "NOSUCH\x00tail", "1"],
        ["REPLCONF", "ip-address", "x" * 300],
        ["REPLCONF", "ip-address", "10.0.0.1"],
        ["REPLCONF", "rdb-only", "2"],
        ["REPLCONF", "rdb-only", "x"],
        ["REPLCONF", "rdb-only", "1"],
        ["REPLCONF", "rdb-only", "0"],
        ["REPLCONF"],
        ["PSYNC", "?"],
        ["PSYNC", "?", "notanumber"],
        ["ROLE"],
        ["ROLE", "extra"],
        ["MULTI"], ["PSYNC", "?", "-1"], ["DISCARD"],
        ["WAIT", "0", "0"],
        ["WAIT", "1", "50"],
        ["WAIT", "x", "0"],
        ["WAIT", "1", "-1"],
        ["WAIT", "1", "1.5"],
        ["WAIT", "1"],
        ["MULTI"], ["WAIT", "5", "0"], ["EXEC"],
        ["SET", "replication:wait:k", "v"], ["WAIT", "0", "10"], ["DEL", "replication:wait:k"],
    ]
    for cmd in cases:
        assert ref.call(*cmd) == sk.call(*cmd), cmd
    # REPLCONF ACK and GETACK from a plain client get no reply at all.
    for c in (ref, sk):
        c.send_raw(b"REPLCONF ACK 10\r\nREPLCONF GETACK *\r\nPING\r\n")
        assert c.read_reply() == b"+PONG\r\n"
    ref.close()
    sk.close()


def same_data(mc, rc):
    """Master and replica hold the same dataset (DEBUG DIGEST, Redis's on both)."""
    assert parse(rc.call("DEBUG", "DIGEST")) == parse(mc.call("DEBUG", "DIGEST")), \
        differing_keys(mc, rc)


def differing_keys(mc, rc, dbs=16):
    """(db, key) pairs whose values differ, for a failure's message."""
    out = []
    for db in range(dbs):
        mc.call("SELECT", str(db))
        rc.call("SELECT", str(db))
        keys = set(parse(mc.call("KEYS", "*"))) | set(parse(rc.call("KEYS", "*")))
        for k in sorted(keys):
            a, b = mc.call("DEBUG", "DIGEST-VALUE", k), rc.call("DEBUG", "DIGEST-VALUE", k)
            if a != b:
                out.append((db, k, mc.call("TYPE", k), rc.call("TYPE", k)))
    mc.call("SELECT", "0")
    rc.call("SELECT", "0")
    return out


def follower(fresh_skein, master, extra=()):
    """A Skein following `master` (a redis-server or a Skein), link up."""
    sk = fresh_skein(extra=["--replicaof", "127.0.0.1", str(master.port), *extra], workers=2)
    sc = RawConn(sk.port)
    wait_for(lambda: info(sc).get("master_link_status") == "up", "the link to come up")
    return sk, sc


def test_skein_replica_follows_redis(fresh_redis, fresh_skein):
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
    mc = RawConn(red.port)
    preload(mc)
    sk, sc = follower(fresh_skein, red)
    busy_writes(red.port, mc, 40)
    caught_up(mc, sc)
    same_data(mc, sc)
    assert_published_through(mc, sk.port)
    # The master's WAIT counts Skein's acknowledgements.
    mc.call("SET", "waited", "1")
    assert mc.call("WAIT", "1", "0") == b":1\r\n"
    # Read-only, and answering as a Redis replica of the same master does.
    red_replica = fresh_redis(extra=["--replicaof", "127.0.0.1", str(red.port)])
    rr = RawConn(red_replica.port)
    wait_for(lambda: info(rr)["master_link_status"] == "up", "the Redis replica")
    caught_up(mc, rr)
    for cmd in (["SET", "x", "1"],
                ["EVAL", "return redis.call('SET', 'x', '1')", "0"],
                ["EVAL", "return redis.call('GET', 'waited')", "0"],
                ["MULTI"], ["INCR", "waited"], ["EXEC"],
                ["WAIT", "0", "0"],
                ["REPLICAOF", "127.0.0.1", str(red.port)],
                ["PUBLISH", "ch", "m"]):
        assert sc.call(*cmd) == rr.call(*cmd), cmd
    # INFO replication has a Redis replica's fields, in its order.
    assert list(info(sc)) == list(info(rr))
    role = parse(sc.call("ROLE"))
    assert role[:4] == [b"slave", b"127.0.0.1", red.port, b"connected"]
    s = info(sc)
    assert s["role"] == "slave" and s["master_replid"] == info(mc)["master_replid"]
    # CLIENT KILL TYPE master drops the link; it comes back with a partial resync.
    assert sc.call("CLIENT", "KILL", "TYPE", "master") == b":1\r\n"
    # (The master's stream goes on in the database it last selected, 3, with no SELECT.)
    mc.call("SET", "after-kill", "1")
    workload(red.port, "after", 5)
    wait_for(lambda: info(sc)["master_link_status"] == "up", "the link to come back")
    caught_up(mc, sc)
    assert parse(sc.call("DEBUG", "DIGEST")) == parse(mc.call("DEBUG", "DIGEST"))
    with open(os.path.join(sk.dir, "server.log")) as f:
        assert f.read().count("Successful partial resynchronization with master.") == 1
    # Promoted: writable, a master again, the data kept.
    assert sc.call("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
    assert sc.call("SET", "x", "1") == b"+OK\r\n"
    assert parse(sc.call("ROLE"))[0] == b"master"
    sc.call("SELECT", "3")
    assert sc.call("GET", "waited") == b"$1\r\n1\r\n"


def test_skein_replica_of_skein_by_replicaof(fresh_skein):
    """REPLICAOF at run time, Skein to Skein; the replica's old data gives way to the
    master's; REPLICAOF of the same master again changes nothing; far over its maxmemory,
    the replica evicts nothing (replica-ignore-maxmemory yes, the default)."""
    master = fresh_skein(workers=2)
    mc = RawConn(master.port)
    preload(mc)
    rep = fresh_skein(extra=["--maxmemory-policy", "allkeys-random"], workers=2)
    rc = RawConn(rep.port)
    rc.call("SET", "only-here", "1")
    assert rc.call("REPLICAOF", "127.0.0.1", str(master.port)) == b"+OK\r\n"
    assert rc.call("CONFIG", "SET", "maxmemory", "1mb") == b"+OK\r\n"
    assert rc.call("REPLICAOF", "127.0.0.1", str(master.port)) == \
        b"+OK Already connected to specified master\r\n"
    wait_for(lambda: info(rc)["master_link_status"] == "up", "the link to come up")
    workload(master.port, "w", 30)
    caught_up(mc, rc)
    same_data(mc, rc)
    assert rc.call("EXISTS", "only-here") == b":0\r\n"
    assert info(rc, "stats")["evicted_keys"] == "0"


def test_chained_replication(fresh_redis, fresh_skein):
    """redis-server master -> Skein replica -> redis-server replica of the Skein: the last
    one follows the first through the middle (the middle's own stream and replication ID,
    as its writes come from its master's)."""
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
    mc = RawConn(red.port)
    preload(mc)
    mid, midc = follower(fresh_skein, red)
    last, lc = replica_of(fresh_redis, mid)
    busy_writes(red.port, mc, 20)
    digest = lambda c: parse(c.call("DEBUG", "DIGEST"))  # noqa: E731
    wait_for(lambda: digest(lc) == digest(midc) == digest(mc), "the chain to agree")
    assert_published_through(mc, last.port)
    # The middle's link drops and comes back: its replica is still served.
    assert midc.call("CLIENT", "KILL", "TYPE", "master") == b":1\r\n"
    workload(red.port, "again", 5)
    wait_for(lambda: digest(lc) == digest(mc), "the chain after the middle's reconnection")


def test_skein_replica_with_the_aof_on(fresh_redis, fresh_skein):
    """After a full sync the replica's AOF starts again from a rewrite of the new dataset
    (as Redis's does), then takes the master's stream: it alone rebuilds the dataset."""
    red = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
    mc = RawConn(red.port)
    preload(mc)
    sk, sc = follower(fresh_skein, red, extra=["--appendonly", "yes"])
    workload(red.port, "w", 30)
    caught_up(mc, sc)
    wait_for(lambda: info(sc, "persistence")["aof_rewrite_in_progress"] == "0"
             and info(sc, "persistence")["aof_rewrite_scheduled"] == "0", "the rewrite")
    same_data(mc, sc)
    assert sc.call("DEBUG", "LOADAOF") == b"+OK\r\n"
    same_data(mc, sc)


# Generated commands that would block, change the connection's mode or the server's
# settings, or end either: left out of the replicated run.
NOT_REPLAYED = {
    "multi", "exec", "discard", "watch", "unwatch", "config", "debug", "client", "function",
    "script", "reset", "hello", "auth", "quit", "shutdown", "monitor", "subscribe",
    "psubscribe", "ssubscribe", "blpop", "brpop", "brpoplpush", "blmove", "blmpop",
    "bzpopmin", "bzpopmax", "bzmpop", "xread", "xreadgroup", "wait", "replicaof", "slaveof",
    "failover", "sync", "psync", "replconf", "save", "bgsave", "bgrewriteaof",
}


@pytest.mark.parametrize("direction", ["skein->redis", "redis->skein"])
def test_generated_commands_replicate(direction, fresh_skein, fresh_redis):
    """The command fuzzer's commands (every command and subcommand served, well-formed and
    malformed, in several databases) sent to the master: the replica ends with its data."""
    import cmd_fuzz
    if direction == "skein->redis":
        master = fresh_skein(workers=2)
        fresh_redis(extra=["--replicaof", "127.0.0.1", str(master.port)])
        replica_port = None
    else:
        master = fresh_redis(extra=["--repl-diskless-sync-delay", "0"])
        replica_port = follower(fresh_skein, master)[0].port
    mc = RawConn(master.port, timeout=30)
    if replica_port is None:
        wait_for(lambda: info(mc)["connected_slaves"] == "1", "the replica")
        replica_port = int(info(mc)["slave0"].split("port=")[1].split(",")[0])
    rc = RawConn(replica_port)
    wait_for(lambda: info(rc).get("master_link_status") == "up", "the link")
    specs = cmd_fuzz.load_specs()
    gen = cmd_fuzz.Generator(7, specs, cmd_fuzz.known_commands(mc, specs), 0.05, 0.0, None)
    steps = list(gen.setup()) + [gen.next()[1] for _ in range(2500)]
    sent = 0
    for args in steps:
        if args and all(isinstance(a, str) for a in args) \
                and args[0].lower() not in NOT_REPLAYED:
            mc.call(*[a.encode("latin-1") for a in args])
            sent += 1
    assert sent > 1500
    caught_up(mc, rc)
    same_data(mc, rc)


def test_replica_survives_a_bad_master(fresh_skein):
    """A "master" answering the handshake with cut snapshots, bad framing and garbage: the
    replica keeps its data (a snapshot is checked whole before the dataset is replaced),
    logs why the link failed, retries, and never panics."""
    import socket
    bad = [
        b"+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC " + b"a" * 40 + b" 0\r\n$EOF:short\r\nxxxx",
        b"+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC " + b"a" * 40 + b" 0\r\n$9\r\nREDIS0010",
        b"+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC x notanumber\r\n",
        b"+PONG\r\n+OK\r\n+OK\r\n+CONTINUE\r\n*1\r\n$99999999999\r\n",
        b"+PONG\r\n+OK\r\n+OK\r\n+CONTINUE\r\n*2\r\n$6\r\nSELECT\r\n$5\r\n99999\r\n*9999999999\r\n",
        bytes(range(256)),
    ]
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4)
    lsock.settimeout(20)
    sk = fresh_skein(workers=2)
    c = RawConn(sk.port)
    c.call("SET", "mine", "1")
    assert c.call("REPLICAOF", "127.0.0.1", str(lsock.getsockname()[1])) == b"+OK\r\n"
    try:
        for reply in bad:
            conn, _ = lsock.accept()
            with conn:
                time.sleep(0.1)
                conn.sendall(reply)
                time.sleep(0.3)
    finally:
        lsock.close()
    assert c.call("GET", "mine") == b"$1\r\n1\r\n"
    assert parse(c.call("ROLE"))[3] in (b"connect", b"connecting")
    assert sk.alive()
    assert c.call("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
    with open(os.path.join(sk.dir, "server.log")) as f:
        log = f.read()
    assert "internal error" not in log and "panicked" not in log
    assert "the master's snapshot is cut or damaged" in log


def test_shutdown_waits_for_the_replicas(fresh_skein, fresh_redis):
    """SHUTDOWN (without NOW) waits, up to shutdown-timeout, for the replicas to acknowledge
    every write: the replica holds the master's last data when it is gone."""
    sk = fresh_skein(workers=2)
    mc = RawConn(sk.port)
    r, rc = replica_of(fresh_redis, sk)
    workload(sk.port, "w", 20)
    want = parse(mc.call("DEBUG", "DIGEST"))
    try:
        mc.call("SHUTDOWN", "NOSAVE")
    except (ConnectionError, OSError):
        pass
    wait_for(lambda: not sk.alive(), "the master to exit")
    assert parse(rc.call("DEBUG", "DIGEST")) == want
    with open(os.path.join(sk.dir, "server.log")) as f:
        log = f.read()
    assert "Waiting for replicas before shutting down." in log
    assert "1 of 1 replicas are in sync when shutting down." in log


def test_min_replicas_to_write(fresh_skein, fresh_redis):
    """With min-replicas-to-write, writes are refused until enough replicas acknowledge in
    time, as Redis refuses them (plain writes, transactions, a script's first write)."""
    opts = ["--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"]
    sk, red = fresh_skein(extra=opts, workers=2), fresh_redis(extra=opts)
    a, b = RawConn(sk.port), RawConn(red.port)
    for cmd in (["SET", "k", "v"], ["GET", "k"], ["MULTI"], ["SET", "k", "v"], ["EXEC"],
                ["EVAL", "return redis.call('SET', 'k', 'v')", "0"],
                ["EVAL", "return redis.call('GET', 'k')", "0"], ["PUBLISH", "c", "m"]):
        assert a.call(*cmd) == b.call(*cmd), cmd
    assert info(a)["min_slaves_good_slaves"] == info(b)["min_slaves_good_slaves"] == "0"
    assert list(info(a)) == list(info(b))
    # A replica that acknowledges: writes go through.
    replica_of(fresh_redis, sk)
    wait_for(lambda: info(a)["min_slaves_good_slaves"] == "1", "a good replica")
    assert a.call("SET", "k", "v") == b"+OK\r\n"
