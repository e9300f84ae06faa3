"""CLIENT subcommands and MONITOR over real sockets, against redis-server 7.0.15 where the
reply is deterministic enough to compare, and on Skein with several workers (clients of
one test usually land on different workers)."""
import re
import socket
import time

import pytest

from resp_client import RawConn, encode, parse


def fields(line):
    return [kv.split("=", 1) for kv in line.split(" ")]


def client_info(c):
    raw = c.call("CLIENT", "INFO")
    text = parse(raw).decode()
    assert text.endswith("\n")
    return dict(fields(text.strip()))


def test_client_list_fields_match_redis(redis_server, skein_server):
    names = {}
    for name, port in [("redis", redis_server.port), ("skein", skein_server.port)]:
        c = RawConn(port)
        c.call("CLIENT", "SETNAME", "lister")
        text = parse(c.call("CLIENT", "LIST")).decode()
        mine = [line for line in text.splitlines() if "name=lister " in line]
        assert len(mine) == 1
        names[name] = [k for k, _ in fields(mine[0])]
        info = dict(fields(mine[0]))
        assert info["cmd"] == "client|list"
        assert info["flags"] == "N"
        assert info["multi"] == "-1"
        assert info["omem"] == "0"
        assert info["argv-mem"] == "10"
        assert info["qbuf"] == "26"
        assert info["user"] == "default"
        assert info["addr"].startswith("127.0.0.1:")
        assert info["laddr"] == "127.0.0.1:%d" % port
        c.close()
    assert names["skein"] == names["redis"]


def test_client_info_tracks_state(skein_server):
    c = RawConn(skein_server.port)
    info = client_info(c)
    assert int(info["id"]) == parse(c.call("CLIENT", "ID"))
    assert info["db"] == "0" and info["resp"] == "2" and info["name"] == ""
    c.call("SELECT", "3")
    c.call("CLIENT", "SETNAME", "tracked")
    c.call("CLIENT", "NO-EVICT", "on")
    c.call("HELLO", "3")
    info = client_info(c)
    assert info["db"] == "3"
    assert info["name"] == "tracked"
    assert info["resp"] == "3"
    assert info["flags"] == "e"
    assert info["cmd"] == "client|info"
    assert info["events"] == "r"
    assert c.call("RESET") == b"+RESET\r\n"
    info = client_info(c)
    assert info["db"] == "0" and info["name"] == "" and info["resp"] == "2"
    c.close()


def test_client_list_type_and_id(skein_server):
    a, b = RawConn(skein_server.port), RawConn(skein_server.port)
    ida, idb = parse(a.call("CLIENT", "ID")), parse(b.call("CLIENT", "ID"))
    text = parse(a.call("CLIENT", "LIST", "ID", idb, ida, 99999999)).decode()
    ids = [int(re.match(r"id=(\d+)", line).group(1)) for line in text.splitlines()]
    assert ids == [idb, ida]
    text = parse(a.call("CLIENT", "LIST", "TYPE", "normal")).decode()
    assert "id=%d " % ida in text and "id=%d " % idb in text
    assert parse(a.call("CLIENT", "LIST", "TYPE", "pubsub")) == b""
    a.close()
    b.close()


def wait_closed(c, timeout=5):
    c.sock.settimeout(timeout)
    try:
        return c.sock.recv(100) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_client_kill_forms(skein_server):
    port = skein_server.port
    me = RawConn(port)
    victim = RawConn(port)
    vid = parse(victim.call("CLIENT", "ID"))
    vaddr = client_info(victim)["addr"]
    # Old form: by address.
    assert me.call("CLIENT", "KILL", vaddr) == b"+OK\r\n"
    assert wait_closed(victim)
    assert me.call("CLIENT", "KILL", vaddr) == b"-ERR No such client\r\n"
    assert ("id=%d " % vid).encode() not in me.call("CLIENT", "LIST")
    # New form: by id, count returned.
    victim = RawConn(port)
    vid = parse(victim.call("CLIENT", "ID"))
    assert me.call("CLIENT", "KILL", "ID", vid) == b":1\r\n"
    assert wait_closed(victim)
    assert me.call("CLIENT", "KILL", "ID", vid) == b":0\r\n"
    # LADDR + USER + TYPE, skipping the caller.
    victims = [RawConn(port) for _ in range(3)]
    for v in victims:
        v.call("PING")
    n = parse(me.call("CLIENT", "KILL", "LADDR", "127.0.0.1:%d" % port,
                      "USER", "default", "TYPE", "normal"))
    assert n >= 3
    for v in victims:
        assert wait_closed(v)
    assert me.call("PING") == b"+PONG\r\n"
    # MAXAGE (Redis 7.4's filter): young clients survive.
    young = RawConn(port)
    young.call("PING")
    assert me.call("CLIENT", "KILL", "MAXAGE", 1000, "SKIPME", "yes") == b":0\r\n"
    assert young.call("PING") == b"+PONG\r\n"
    young.close()
    # SKIPME no: the caller gets its reply, then is closed.
    myid = parse(me.call("CLIENT", "ID"))
    assert me.call("CLIENT", "KILL", "ID", myid, "SKIPME", "no") == b":1\r\n"
    assert wait_closed(me)


def test_client_kill_self_old_form(redis_server, skein_server):
    for port in (redis_server.port, skein_server.port):
        c = RawConn(port)
        addr = client_info(c)["addr"]
        assert c.call("CLIENT", "KILL", addr) == b"+OK\r\n"
        assert wait_closed(c)


def test_client_reply_modes(redis_server, skein_server):
    script = [["CLIENT", "REPLY", "OFF"], ["PING"], ["SET", "rm", "1"],
              ["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY", "ON"], ["ECHO", "a"],
              ["CLIENT", "REPLY", "SKIP"], ["ECHO", "b"], ["ECHO", "c"], ["GET", "rm"]]
    got = {}
    for name, port in [("redis", redis_server.port), ("skein", skein_server.port)]:
        c = RawConn(port)
        c.send_raw(b"".join(encode(x) for x in script))
        got[name] = [c.read_reply() for _ in range(4)]
        c.close()
    assert got["skein"] == got["redis"] == [b"+OK\r\n", b"$1\r\na\r\n", b"$1\r\nc\r\n",
                                            b"$1\r\n1\r\n"]


def test_pause_write_holds_writes_only(fresh_skein):
    srv = fresh_skein(workers=2)
    admin, writer, reader = (RawConn(srv.port) for _ in range(3))
    writer.call("SET", "pw", "old")
    assert admin.call("CLIENT", "PAUSE", 100000, "WRITE") == b"+OK\r\n"
    # The writer's pipeline: the SET waits, and so does everything after it.
    writer.send_raw(encode(["GET", "pw"]) + encode(["SET", "pw", "new"]) +
                    encode(["GET", "pw"]))
    assert writer.read_reply() == b"$3\r\nold\r\n"
    writer.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        writer.read_reply()
    writer.sock.settimeout(10)
    assert reader.call("GET", "pw") == b"$3\r\nold\r\n"
    flags = [dict(fields(line))["flags"]
             for line in parse(admin.call("CLIENT", "LIST")).decode().splitlines()]
    assert "b" in flags
    assert admin.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert writer.read_reply() == b"+OK\r\n"
    assert writer.read_reply() == b"$3\r\nnew\r\n"
    for c in (admin, writer, reader):
        c.close()


def test_pause_all_expires(fresh_skein):
    srv = fresh_skein(workers=2)
    admin, other = RawConn(srv.port), RawConn(srv.port)
    assert admin.call("CLIENT", "PAUSE", 700) == b"+OK\r\n"
    start = time.time()
    assert other.call("PING") == b"+PONG\r\n"
    assert time.time() - start > 0.3  # held back until the pause ended
    # Pausing again with a shorter time cannot shorten a running pause, and mixing
    # kinds keeps the stronger one.
    admin.call("CLIENT", "PAUSE", 100000, "WRITE")
    admin.call("CLIENT", "PAUSE", 1, "ALL")
    other.sock.settimeout(0.5)
    other.send_raw(encode(["PING"]))
    with pytest.raises(socket.timeout):
        other.read_reply()
    other.sock.settimeout(10)
    admin2 = RawConn(srv.port)
    admin2.sock.settimeout(0.5)
    admin2.send_raw(encode(["CLIENT", "UNPAUSE"]))
    with pytest.raises(socket.timeout):
        admin2.read_reply()  # ALL pauses CLIENT UNPAUSE too, as in Redis
    admin2.close()
    for c in (admin, other):
        c.close()


MON_LINE = re.compile(rb'^\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)$')


def monitor_lines(m, count, timeout=10):
    m.sock.settimeout(timeout)
    out = []
    for _ in range(count):
        raw = m.read_reply()
        assert raw.endswith(b"\r\n")
        out.append(raw[:-2])
    return out


def strip_mon(line):
    g = MON_LINE.match(line)
    assert g, line
    return g.group(3), g.group(5)


def run_monitor_script(port):
    m = RawConn(port)
    assert m.call("MONITOR") == b"+OK\r\n"
    c = RawConn(port)
    c.call("SET", "mk", b"\x00\x01\"\\\xff\n\r\t\x07\x08 z")
    c.call("SELECT", "2")
    c.call("AUTH", "pw")
    c.call("AUTH", "u", "p")
    c.call("AUTH", "a", "b", "c")
    c.call("HELLO", "2", "AUTH", "default", "x", "SETNAME", "n1")
    c.call("HELLO", "9", "AUTH", "a", "b")
    c.call("CONFIG", "GET", "maxclients")   # admin: not shown
    c.call("NOSUCHCMD")                      # rejected: not shown
    c.call("GET")                            # arity error: not shown
    c.call("INCR", "mk")                     # runs (error reply): shown
    c.call("CLIENT", "ID")
    c.close()
    lines = [strip_mon(x) for x in monitor_lines(m, 9)]
    # The monitor's own commands: its reply first, then its line; key access refused.
    assert m.call("PING") == b"+PONG\r\n"
    assert strip_mon(monitor_lines(m, 1)[0])[1] == b'"PING"'
    assert m.call("GET", "mk") == b"-ERR Replica can't interact with the keyspace\r\n"
    assert m.call("RESET") == b"+RESET\r\n"
    assert m.call("EXISTS", "mk") == b":1\r\n"
    m.close()
    return lines


def test_monitor_matches_redis(redis_server, skein_server):
    r = run_monitor_script(redis_server.port)
    s = run_monitor_script(skein_server.port)
    assert [x[1] for x in s] == [x[1] for x in r]
    assert [x[0] for x in s] == [x[0] for x in r]
    assert s[0][1] == b'"SET" "mk" "\\x00\\x01\\"\\\\\\xff\\n\\r\\t\\a\\b z"'
    assert s[2][1] == b'"AUTH" "(redacted)"'


def test_monitor_sees_all_workers(fresh_skein):
    srv = fresh_skein(workers=4)
    m = RawConn(srv.port)
    assert m.call("MONITOR") == b"+OK\r\n"
    clients = [RawConn(srv.port) for _ in range(8)]
    for i, c in enumerate(clients):
        for j in range(25):
            assert c.call("SET", "w%d" % i, j) == b"+OK\r\n"
    lines = monitor_lines(m, 8 * 25)
    seen = {}
    for line in lines:
        _, args = strip_mon(line)
        k, v = re.match(rb'"SET" "(w\d)" "(\d+)"', args).groups()
        seen.setdefault(k, []).append(int(v))
    # Every command of every client, each client's in its order.
    assert seen == {b"w%d" % i: list(range(25)) for i in range(8)}
    addrs = {strip_mon(x)[0] for x in lines}
    assert addrs == {b"0"}
    m.close()
    c = RawConn(srv.port)
    # Once the monitor is gone, nothing is fed and nothing leaks.
    deadline = time.time() + 5
    while b"flags=O" in c.call("CLIENT", "LIST") and time.time() < deadline:
        time.sleep(0.05)
    assert b"flags=O" not in c.call("CLIENT", "LIST")
    for x in clients + [c]:
        x.close()


def test_new_connection_age_starts_at_zero(fresh_skein):
    """A connection handed to a worker that has served nothing for a while is born now,
    not at that worker's last batch (CLIENT LIST showed age=3 for a fresh client)."""
    s = fresh_skein(workers=1)
    old = RawConn(s.port)
    assert old.call("PING") == b"+PONG\r\n"
    time.sleep(3)
    new = RawConn(s.port)
    new_id = int(new.call("CLIENT", "ID")[1:-2])
    listed = parse(old.call("CLIENT", "LIST")).decode()
    line = next(l for l in listed.splitlines() if dict(fields(l)).get("id") == str(new_id))
    assert int(dict(fields(line))["age"]) <= 1, line
    assert int(dict(fields(line))["idle"]) <= 1, line
    old.close()
    new.close()


def multi_mem_steps(port):
    """multi-mem of a client (read by another) after each step of WATCH/MULTI/queueing."""
    c, o = RawConn(port), RawConn(port)
    my_id = c.call("CLIENT", "ID")[1:-2].decode()

    def mem():
        listed = parse(o.call("CLIENT", "LIST", "ID", my_id)).decode()
        f = dict(fields(listed.strip()))
        return int(f["multi-mem"]), int(f["tot-mem"])

    steps = [mem()]
    for cmd in [
        ("WATCH", "a", "bb"),
        ("WATCH", "ccc"),
        ("MULTI",),
        ("SET", "key", "value"),
        ("INCR", "counter"),
        ("GET", "x" * 100),
        ("RPUSH", "l", "1", "2", "3", "4"),
        ("PING",),
        ("DISCARD",),
        ("MULTI",),
        ("SET", "k", "v"),
        ("EXEC",),
        ("WATCH", "k"),
        ("UNWATCH",),
    ]:
        c.call(*cmd)
        steps.append(mem())
    c.close()
    o.close()
    return steps


def test_multi_mem_matches_redis(redis_server, skein_server):
    """CLIENT LIST multi-mem counts queued commands as Redis 7.0.15's
    multiStateMemOverhead does, and tot-mem includes it."""
    want = multi_mem_steps(redis_server.port)
    got = multi_mem_steps(skein_server.port)
    assert [m for m, _ in got] == [m for m, _ in want]
    base = got[0][1]
    for m, tot in got:
        assert tot >= base + m - 64 * 1024  # buffers may shrink; multi-mem is counted in
    assert max(m for m, _ in got) > 0


def stalled_subscriber_tot_mem(port):
    """tot-mem of a subscriber that stopped reading while 20 MB were published to it."""
    sub = RawConn(port)
    sub_id = sub.call("CLIENT", "ID")[1:-2].decode()
    sub.sock.sendall(encode(["SUBSCRIBE", "news"]))
    pub = RawConn(port)
    while not pub.call("PUBSUB", "NUMSUB", "news").endswith(b":1\r\n"):
        time.sleep(0.01)
    for _ in range(20):
        assert pub.call("PUBLISH", "news", b"x" * 1_000_000) == b":1\r\n"
    deadline = time.time() + 10
    while True:
        line = parse(pub.call("CLIENT", "LIST", "ID", sub_id)).decode().strip()
        mem = int(dict(fields(line))["tot-mem"])
        if mem > 4_000_000 or time.time() > deadline:
            break
        time.sleep(0.05)
    sub.close()
    pub.close()
    return mem


def test_stalled_subscriber_counts_its_backlog(redis_server, skein_server):
    """Messages waiting for a subscriber count in its tot-mem (what maxmemory-clients
    weighs), as in Redis, whichever thread queued them."""
    for server in (redis_server, skein_server):
        assert stalled_subscriber_tot_mem(server.port) > 4_000_000
