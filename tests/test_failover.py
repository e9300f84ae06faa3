"""FAILOVER (Redis 7.0's coordinated failover), both sides: Skein as the master that
fails over to its replica (redis-server 7.0.15 or Skein), and Skein as the replica that
receives the master's PSYNC ... FAILOVER and becomes the master. After each failover the
roles are swapped, writes on the new master reach the old one (DEBUG DIGEST equal), and
the old master refuses writes. The errors, the INFO field master_failover_state, ABORT,
TIMEOUT and FORCE are compared with redis-server 7.0.15 doing the same (outcomes only,
never timings: a replica held with SIGSTOP is one that cannot catch up)."""
import os
import signal
import threading

import pytest

from resp_client import RawConn, parse
from test_replication import busy_writes, info, preload, same_data, wait_for


def role(conn):
    return parse(conn.call("ROLE"))[0]


def link_up(conn):
    return info(conn).get("master_link_status") == "up"


def follower_of(start, master):
    """A new server (start()'s kind) following `master`, link up and online for the
    master (a Redis master puts a replica online at its first ACK)."""
    s = start(extra=["--replicaof", "127.0.0.1", str(master.port)])
    c = RawConn(s.port)
    mc = RawConn(master.port)
    wait_for(lambda: link_up(c) and f"port={s.port},state=online" in str(info(mc)),
             "the replica to be online")
    mc.close()
    return s, c


def start_skein(fresh_skein):
    return lambda extra=(): fresh_skein(extra=extra, workers=2)


def start_redis(fresh_redis):
    return lambda extra=(): fresh_redis(extra=["--repl-diskless-sync-delay", "0", *extra])


def caught_up(mc, rc):
    wait_for(lambda: info(mc)["master_repl_offset"] == info(rc)["slave_repl_offset"],
             "the replica to catch up")


def swapped(old, new):
    """The failover is over: `old` follows `new` with its link up, `new` is a master."""
    wait_for(lambda: role(new) == b"master" and role(old) == b"slave" and link_up(old)
             and info(old)["master_failover_state"] == "no-failover",
             "the roles to swap")


def failover_and_check(master, mc, replica, rc, *args):
    """FAILOVER from `master` to `replica`, then writes on the new master reach the old.
    The old master continues the new master's stream (a partial resync: the new master
    keeps the old one's ID as its master_replid2)."""
    preload(mc)
    busy_writes(master.port, mc, 10)
    caught_up(mc, rc)
    old_id, offset = info(mc)["master_replid"], info(mc)["master_repl_offset"]
    partial = int(info(rc, "stats")["sync_partial_ok"])
    assert mc.call("FAILOVER", *args) == b"+OK\r\n"
    swapped(mc, rc)
    assert info(rc)["master_failover_state"] == "no-failover"
    new = info(rc)
    # (A PING may have come since the offset was read.)
    assert new["master_replid2"] == old_id
    assert int(new["second_repl_offset"]) >= int(offset) + 1
    assert int(info(rc, "stats")["sync_partial_ok"]) == partial + 1
    assert mc.call("SET", "after", "1").startswith(b"-READONLY")
    busy_writes(replica.port, rc, 10)
    rc.call("SET", "after", "2")
    caught_up(rc, mc)
    same_data(rc, mc)
    assert mc.call("GET", "after") == b"$1\r\n2\r\n"
    m = parse(mc.call("ROLE"))
    assert m[1:3] == [b"127.0.0.1", replica.port]


@pytest.mark.parametrize("pair", ["skein-redis", "redis-skein", "skein-skein"])
def test_failover_swaps_roles(pair, fresh_skein, fresh_redis):
    """The master fails over to its replica: any caught-up replica (no TO), or the one TO
    names."""
    kinds = {"skein": start_skein(fresh_skein), "redis": start_redis(fresh_redis)}
    m_kind, r_kind = pair.split("-")
    master = kinds[m_kind]()
    mc = RawConn(master.port)
    replica, rc = follower_of(kinds[r_kind], master)
    failover_and_check(master, mc, replica, rc)
    # And back again, naming the target this time.
    failover_and_check(replica, rc, master, mc, "TO", "127.0.0.1", str(master.port))


def test_errors_match_redis(fresh_skein, fresh_redis):
    """Syntax and state errors, on a master without replicas, then with one, then on the
    replica, and COMMAND INFO/DOCS; the same replies from Skein and Redis."""
    servers = {"skein": start_skein(fresh_skein), "redis": start_redis(fresh_redis)}
    replies = {}
    for kind, start in servers.items():
        m = start()
        mc = RawConn(m.port)
        out = replies[kind] = []
        for args in (["ABORT"], [], ["TIMEOUT", "0"], ["TIMEOUT", "-5"], ["TIMEOUT", "x"],
                     ["TO", "h"], ["TO", "h", "p"], ["FORCE"], ["FORCE", "FORCE"],
                     ["TIMEOUT", "10", "TIMEOUT", "10"], ["ABORT", "TIMEOUT", "10"],
                     ["TO", "a", "1", "TO", "b", "2"], ["BOGUS"], ["abort", "abort"],
                     ["TO", "127.0.0.1", "1", "FORCE"]):
            out.append(mc.call("FAILOVER", *args))
        out.append(mc.call("PSYNC", "?", "-1", "FAILOVER"))
        out.append(mc.call("COMMAND", "INFO", "FAILOVER"))
        out.append(mc.call("COMMAND", "DOCS", "FAILOVER"))
        out.append(info(mc)["master_failover_state"])
        r = start(extra=["--replicaof", "127.0.0.1", str(m.port)])
        rc = RawConn(r.port)
        wait_for(lambda: link_up(rc) and "state=online" in info(mc).get("slave0", ""),
                 "the replica to be online")
        for args in (["TO", "127.0.0.1", "1"], ["TO", "127.0.0.2", str(r.port)],
                     ["TO", "127.0.0.1", "99999"], ["FORCE", "TIMEOUT", "10"],
                     ["TO", "127.0.0.1", str(r.port), "FORCE"], ["FORCE"]):
            out.append(mc.call("FAILOVER", *args))
        out.append(rc.call("FAILOVER"))
        out.append(rc.call("FAILOVER", "TO", "127.0.0.1", str(m.port)))
        out.append(rc.call("FAILOVER", "ABORT"))
        out.append(rc.call("PSYNC", "0" * 40, "1", "FAILOVER"))
        out.append(info(rc)["master_failover_state"])
        out.append(role(rc))
    assert replies["skein"] == replies["redis"]


def stopped(server):
    """Hold a server still (SIGSTOP): a replica that cannot acknowledge anything."""
    os.kill(server.pid, signal.SIGSTOP)


def held_replica(kind, fresh_skein, fresh_redis):
    """A master (Skein or Redis) and its redis-server replica, in sync, then held still."""
    start = start_skein(fresh_skein) if kind == "skein" else start_redis(fresh_redis)
    m = start()
    mc = RawConn(m.port)
    r, rc = follower_of(start_redis(fresh_redis), m)
    mc.call("SET", "k", "v")
    caught_up(mc, rc)
    stopped(r)
    return m, mc, r, rc


def resumed(server):
    os.kill(server.pid, signal.SIGCONT)


def paused_write(port, out):
    """A write from a client of its own; its reply lands in `out` when it comes."""
    c = RawConn(port, timeout=60)
    out.append(c.call("SET", "held", "1"))
    c.close()


@pytest.mark.parametrize("kind", ["skein", "redis"])
def test_abort_and_timeout(kind, fresh_skein, fresh_redis):
    """A replica that cannot catch up: writes wait meanwhile (as CLIENT PAUSE WRITE),
    reads do not; FAILOVER and REPLICAOF are refused while one is under way; ABORT ends it
    and a TIMEOUT gives up, the master staying a master, the held write done."""
    m, mc, r, rc = held_replica(kind, fresh_skein, fresh_redis)
    try:
        mc.call("SET", "k2", "v2")
        assert mc.call("FAILOVER") == b"+OK\r\n"
        assert info(mc)["master_failover_state"] == "waiting-for-sync"
        held = []
        t = threading.Thread(target=paused_write, args=(m.port, held))
        t.start()
        t.join(0.3)
        assert held == []
        assert mc.call("GET", "k") == b"$1\r\nv\r\n"
        # WAIT asks for no ACK while writes are paused: the offset stays put.
        offset = info(mc)["master_repl_offset"]
        assert mc.call("WAIT", "1", "50") == b":0\r\n"
        assert info(mc)["master_repl_offset"] == offset
        assert mc.call("FAILOVER") == b"-ERR FAILOVER already in progress.\r\n"
        assert mc.call("REPLICAOF", "127.0.0.1", str(r.port)) == \
            b"-ERR REPLICAOF not allowed while failing over.\r\n"
        # CLIENT UNPAUSE ends CLIENT PAUSE's pause, not the failover's.
        assert mc.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
        t.join(0.3)
        assert held == []
        assert mc.call("FAILOVER", "ABORT") == b"+OK\r\n"
        t.join(30)
        assert held == [b"+OK\r\n"]
        assert info(mc)["master_failover_state"] == "no-failover"
        assert role(mc) == b"master"
        assert mc.call("FAILOVER", "ABORT") == b"-ERR No failover in progress.\r\n"
        # TIMEOUT without FORCE: gives up once it passes.
        assert mc.call("FAILOVER", "TIMEOUT", "200") == b"+OK\r\n"
        wait_for(lambda: info(mc)["master_failover_state"] == "no-failover",
                 "the failover to time out")
        assert role(mc) == b"master"
        assert mc.call("SET", "k3", "v3") == b"+OK\r\n"
    finally:
        resumed(r)
    caught_up(mc, rc)
    same_data(mc, rc)


@pytest.mark.parametrize("kind", ["skein", "redis"])
def test_force_fails_over_to_a_replica_behind(kind, fresh_skein, fresh_redis):
    """TO ... FORCE TIMEOUT: once the timeout passes the master fails over to its target
    even though it never caught up (the target, held still, answers once resumed); a
    write held back meanwhile is refused as a replica's; the old master then takes the new
    master's data."""
    m, mc, r, rc = held_replica(kind, fresh_skein, fresh_redis)
    try:
        mc.call("SET", "lost", "1")
        assert mc.call("FAILOVER", "TO", "127.0.0.1", str(r.port), "FORCE",
                       "TIMEOUT", "100") == b"+OK\r\n"
        held = []
        t = threading.Thread(target=paused_write, args=(m.port, held))
        t.start()
        wait_for(lambda: info(mc)["master_failover_state"] == "failover-in-progress",
                 "the timeout to pass")
        assert role(mc) == b"slave"
    finally:
        resumed(r)
    swapped(mc, rc)
    # The write held back by the pause runs once it ends, on what is now a replica.
    t.join(30)
    assert held[0].startswith(b"-READONLY")
    rc.call("SET", "new", "1")
    caught_up(rc, mc)
    same_data(rc, mc)
    assert mc.call("GET", "new") == b"$1\r\n1\r\n"


def writer(port, tag, stop, acked):
    """SETs tag:0, tag:1, ... until `stop` is set; the keys the server answered +OK go
    to `acked`."""
    c = RawConn(port, timeout=60)
    i = 0
    while not stop.is_set():
        if c.call("SET", f"{tag}:{i}", i) == b"+OK\r\n":
            acked.append(f"{tag}:{i}")
        i += 1
    c.close()


@pytest.mark.parametrize("pair", ["skein-redis", "redis-skein", "skein-skein"])
def test_no_acknowledged_write_is_lost(pair, fresh_skein, fresh_redis):
    """Writers keep writing while the master fails over: every write the old master
    answered +OK is on the new master (the failover waits for the target to hold the
    whole stream), and both end with the same data."""
    kinds = {"skein": start_skein(fresh_skein), "redis": start_redis(fresh_redis)}
    m_kind, r_kind = pair.split("-")
    master = kinds[m_kind]()
    mc = RawConn(master.port)
    replica, rc = follower_of(kinds[r_kind], master)
    stop = threading.Event()
    acked = [[] for _ in range(3)]
    threads = [threading.Thread(target=writer, args=(master.port, f"w{n}", stop, a))
               for n, a in enumerate(acked)]
    for t in threads:
        t.start()
    wait_for(lambda: all(len(a) > 50 for a in acked), "the writers to write")
    assert mc.call("FAILOVER", "TO", "127.0.0.1", str(replica.port)) == b"+OK\r\n"
    swapped(mc, rc)
    stop.set()
    for t in threads:
        t.join()
    for a in acked:
        assert rc.call("EXISTS", *a) == b":%d\r\n" % len(a)
    caught_up(rc, mc)
    same_data(rc, mc)


UNBLOCKED = (b"-UNBLOCKED force unblock from blocking operation, instance state changed "
             b"(master -> replica?)\r\n")


@pytest.mark.parametrize("kind", ["skein", "redis"])
def test_blocked_clients_are_unblocked(kind, fresh_skein, fresh_redis):
    """Clients blocked in BLPOP and WAIT on the master get -UNBLOCKED when the master
    turns replica, and their connections close (BLPOP would otherwise pop on a
    replica)."""
    start = start_skein(fresh_skein) if kind == "skein" else start_redis(fresh_redis)
    m = start()
    mc = RawConn(m.port)
    r, rc = follower_of(start_redis(fresh_redis), m)
    b = RawConn(m.port)
    b.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
    w = RawConn(m.port)
    w.send_raw(b"*3\r\n$4\r\nWAIT\r\n$1\r\n5\r\n$1\r\n0\r\n")
    wait_for(lambda: info(mc, "clients")["blocked_clients"] == "2", "the clients to block")
    caught_up(mc, rc)
    assert mc.call("FAILOVER") == b"+OK\r\n"
    swapped(mc, rc)
    for c in (b, w):
        assert c.read_reply() == UNBLOCKED
        assert c.sock.recv(16) == b""
    rc.call("RPUSH", "q", "x")
    caught_up(rc, mc)
    same_data(rc, mc)
    assert mc.call("LLEN", "q") == b":1\r\n"


@pytest.mark.parametrize("pair", ["redis-skein", "skein-skein"])
def test_promoted_replica_lets_its_old_master_continue(pair, fresh_skein, fresh_redis):
    """REPLICAOF NO ONE keeps the master's ID as master_replid2 (up to the offset
    processed + 1): the old master, made its replica, continues with a partial resync."""
    kinds = {"skein": start_skein(fresh_skein), "redis": start_redis(fresh_redis)}
    m_kind, r_kind = pair.split("-")
    # No PING from the master meanwhile: the replica holds its whole stream.
    quiet = ["--repl-ping-replica-period", "3600"]
    master = kinds[m_kind](quiet)
    mc = RawConn(master.port)
    replica, rc = follower_of(kinds[r_kind], master)
    preload(mc)
    busy_writes(master.port, mc, 5)
    caught_up(mc, rc)
    old_id, offset = info(mc)["master_replid"], int(info(mc)["master_repl_offset"])
    assert rc.call("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
    new = info(rc)
    assert (new["role"], new["master_replid2"]) == ("master", old_id)
    assert (new["second_repl_offset"], new["master_repl_offset"]) == (str(offset + 1),
                                                                      str(offset))
    rc.call("SET", "after", "1")
    assert mc.call("REPLICAOF", "127.0.0.1", str(replica.port)) == b"+OK\r\n"
    wait_for(lambda: link_up(mc), "the old master's link to come up")
    stats = info(rc, "stats")
    assert (stats["sync_partial_ok"], stats["sync_full"]) == ("1", "0")
    caught_up(rc, mc)
    same_data(rc, mc)


def fail_over_with_a_third(mc, target, tc, third_master_c, third_c):
    """FAILOVER from `mc` to `target`, then writes on it: the old master and a third
    server (`third_c`, a replica of `third_master_c`) end with its data."""
    preload(mc)
    caught_up(mc, tc)
    assert mc.call("FAILOVER", "TO", "127.0.0.1", str(target.port)) == b"+OK\r\n"
    swapped(mc, tc)
    busy_writes(target.port, tc, 5)
    caught_up(tc, mc)
    caught_up(third_master_c, third_c)
    same_data(tc, mc)
    same_data(tc, third_c)


@pytest.mark.parametrize("kind", ["skein", "redis"])
def test_other_replicas_follow_the_new_master_through_the_old(kind, fresh_skein, fresh_redis):
    """A master with two replicas fails over to one: the other stays a replica of the old
    master, now a replica itself, and ends with the new master's data too."""
    start = start_skein(fresh_skein) if kind == "skein" else start_redis(fresh_redis)
    m = start()
    mc = RawConn(m.port)
    a, ac = follower_of(start_redis(fresh_redis), m)
    b, bc = follower_of(start_redis(fresh_redis), m)
    fail_over_with_a_third(mc, a, ac, mc, bc)


def test_promoted_skein_resyncs_its_own_replicas(fresh_skein, fresh_redis):
    """A Skein replica with a replica of its own is failed over to: its replica (on the
    Skein's former offsets) syncs again and follows the new master's writes."""
    m = start_redis(fresh_redis)()
    mc = RawConn(m.port)
    s, sc = follower_of(start_skein(fresh_skein), m)
    c, cc = follower_of(start_redis(fresh_redis), s)
    fail_over_with_a_third(mc, s, sc, sc, cc)


@pytest.mark.parametrize("kind", ["skein", "redis"])
def test_abort_while_in_progress(kind, fresh_skein, fresh_redis):
    """FORCE made the master follow a target that does not answer: ABORT makes it a
    master again, writes go on, and its replicas (the held one once resumed) follow."""
    m, mc, r, rc = held_replica(kind, fresh_skein, fresh_redis)
    other, oc = follower_of(start_redis(fresh_redis), m)
    try:
        assert mc.call("FAILOVER", "TO", "127.0.0.1", str(r.port), "FORCE",
                       "TIMEOUT", "100") == b"+OK\r\n"
        wait_for(lambda: info(mc)["master_failover_state"] == "failover-in-progress",
                 "the timeout to pass")
        assert mc.call("FAILOVER", "ABORT") == b"+OK\r\n"
        assert info(mc)["master_failover_state"] == "no-failover"
        assert role(mc) == b"master"
        assert mc.call("SET", "after", "1") == b"+OK\r\n"
    finally:
        resumed(r)
    for c in (rc, oc):
        wait_for(lambda: link_up(c), "the replicas' links")
        caught_up(mc, c)
        same_data(mc, c)
    assert role(rc) == b"slave"
