"""Pub/sub against redis-server 7.0.15: the same steps on both servers, raw replies and
messages compared byte for byte (sorted where Redis's own order is a hash order), in RESP2
and RESP3. Then Skein alone: delivery across 4 workers (every message exactly once, in
each publisher's order), cleanup on disconnect, and the pubsub output buffer limits.

Channel names carry a per-test prefix so tests sharing the session servers do not see
each other's channels; tests that count server-wide (NUMPAT, PUBSUB CHANNELS without a
pattern) run on servers of their own."""
import socket
import threading
import time

import hiredis
import pytest

from resp_client import NamedConns, RawConn, compare_sessions, encode, parse


class Session(NamedConns):
    """Named connections to one server and a transcript of what each step got back."""

    def do(self, name, *args, replies=1, norm=None):
        """Send one command on connection `name`, read `replies` replies (pushes
        included) and log them, through `norm` when Redis's order is not defined."""
        c = self.conn(name)
        c.send_raw(encode(args))
        got = [c.read_reply() for _ in range(replies)]
        self.log.append(("%s> %r" % (name, args), norm(got) if norm else got))
        return got

    def read(self, name, n=1):
        """Read `n` pushed messages on connection `name`."""
        c = self.conn(name)
        self.log.append(("%s< read %d" % (name, n), [c.read_reply() for _ in range(n)]))


def run_both(redis_port, skein_port, proto, steps):
    compare_sessions(Session, redis_port, skein_port, proto, steps)


def sorted_replies(got):
    return sorted(got)


def mass_unsub(got):
    """A mass unsubscribe walks a hash table: compare the names as a set and the counts
    in order."""
    decoded = [parse(r) for r in got]
    return sorted(r[1] for r in decoded), [r[2] for r in decoded], [r[:1] for r in decoded]


def channel_list(got):
    return [sorted(parse(got[0]))]


@pytest.mark.parametrize("proto", [2, 3])
def test_subscribe_publish_unsubscribe(proto, redis_server, skein_server):
    p = "sub%d:" % proto

    def steps(s):
        s.do("a", "SUBSCRIBE", p + "a", p + "b", p + "a", replies=3)
        s.do("b", "PUBLISH", p + "a", "hello")
        s.read("a")
        s.do("b", "PUBLISH", p + "c", "nobody")
        s.do("b", "PUBLISH", p + "b", "bin\x00\r\n\xff")
        s.read("a")
        s.do("b", "PUBSUB", "NUMSUB", p + "a", p + "b", p + "c")
        s.do("a", "PING")
        s.do("a", "PING", "hi")
        s.do("a", "PING", "a", "b")
        s.do("a", "ping")
        s.do("a", "GET", p + "k")
        s.do("a", "CONFIG", "GET", "maxmemory", replies=1)
        s.do("a", "PUBLISH", p + "x", "y")
        s.do("a", "NOSUCHCOMMAND")
        s.do("a", "GET")
        s.do("a", "UNSUBSCRIBE", p + "a")
        s.do("a", "UNSUBSCRIBE", p + "nope", p + "nope2", replies=2)
        s.do("b", "PUBLISH", p + "a", "gone")
        s.do("a", "UNSUBSCRIBE")
        s.do("a", "UNSUBSCRIBE")
        s.do("a", "PING")
        s.do("a", "GET", p + "k")
        s.do("b", "PUBSUB", "NUMSUB", p + "a", p + "b")
        s.do("a", "SUBSCRIBE", "\x00\r\n", replies=1)
        s.do("b", "PUBLISH", "\x00\r\n", "")
        s.read("a")
        s.do("a", "UNSUBSCRIBE", "\x00\r\n")

    run_both(redis_server.port, skein_server.port, proto, steps)


@pytest.mark.parametrize("proto", [2, 3])
def test_mass_unsubscribe(proto, redis_server, skein_server):
    p = "mass%d:" % proto

    def steps(s):
        chans = [p + str(i) for i in range(6)]
        s.do("a", "SUBSCRIBE", *chans, replies=6)
        s.do("a", "PSUBSCRIBE", p + "x*")
        s.do("a", "UNSUBSCRIBE", replies=6, norm=mass_unsub)
        s.do("a", "UNSUBSCRIBE")
        s.do("a", "PUNSUBSCRIBE")

    run_both(redis_server.port, skein_server.port, proto, steps)


@pytest.mark.parametrize("proto", [2, 3])
def test_patterns(proto, redis_server, skein_server):
    p = "pat%d:" % proto

    def steps(s):
        s.do("a", "PSUBSCRIBE", p + "n.*", p + "x?", p + "n.*", replies=3)
        s.do("b", "PUBLISH", p + "n.1", "hi")
        s.read("a")
        s.do("a", "SUBSCRIBE", p + "n.1")
        s.do("b", "PUBLISH", p + "n.1", "again")
        s.read("a", 2)  # message first, then pmessage
        s.do("b", "PUBLISH", p + "xy", "z")
        s.read("a")
        s.do("b", "PUBLISH", p + "xyz", "none")
        s.do("a", "PSUBSCRIBE", p + "[ab]\\*", p + "h[^e]llo", replies=2)
        s.do("a", "PSUBSCRIBE", p + "h[^e]llo")
        s.do("b", "PUBLISH", p + "a*", "esc")
        s.read("a")
        s.do("b", "PUBLISH", p + "hallo", "neg")
        s.read("a")
        s.do("b", "PUBLISH", p + "hello", "none")
        s.do("a", "PUNSUBSCRIBE", p + "nope")
        s.do("a", "PUNSUBSCRIBE", p + "h[^e]llo")
        s.do("a", "PUNSUBSCRIBE", replies=3)  # subscription order
        s.do("a", "PUNSUBSCRIBE")
        s.do("a", "UNSUBSCRIBE")
        s.do("a", "PUNSUBSCRIBE")

    run_both(redis_server.port, skein_server.port, proto, steps)


@pytest.mark.parametrize("proto", [2, 3])
def test_shard_channels(proto, redis_server, skein_server):
    p = "shard%d:" % proto

    def steps(s):
        s.do("a", "SSUBSCRIBE", p + "s1", p + "s2", p + "s1", replies=3)
        s.do("a", "SUBSCRIBE", p + "c")
        s.do("a", "PSUBSCRIBE", p + "*")
        s.do("b", "SPUBLISH", p + "s1", "m1")
        s.read("a")
        s.do("b", "PUBLISH", p + "s1", "m2")  # the pattern only
        s.read("a")
        s.do("b", "SPUBLISH", p + "c", "m3")
        s.do("b", "PUBSUB", "SHARDNUMSUB", p + "s1", p + "s2", p + "c")
        s.do("b", "PUBSUB", "NUMSUB", p + "s1", p + "c")
        s.do("b", "PUBSUB", "SHARDCHANNELS", p + "*", norm=channel_list)
        s.do("b", "PUBSUB", "SHARDCHANNELS", p + "s1")
        s.do("b", "PUBSUB", "SHARDNUMSUB")
        s.do("a", "PING")
        s.do("a", "SUNSUBSCRIBE", p + "s1")
        s.do("a", "SUNSUBSCRIBE", p + "s9")
        s.do("a", "SUNSUBSCRIBE")
        s.do("a", "SUNSUBSCRIBE")
        s.do("a", "UNSUBSCRIBE")
        s.do("a", "PING")
        s.do("a", "PUNSUBSCRIBE")
        s.do("a", "PING")

    run_both(redis_server.port, skein_server.port, proto, steps)


@pytest.mark.parametrize("proto", [2, 3])
def test_introspection_and_errors(proto, fresh_redis, fresh_skein):
    def steps(s):
        s.do("b", "PUBSUB", "NUMPAT")
        s.do("b", "PUBSUB", "CHANNELS")
        s.do("b", "PUBSUB", "SHARDCHANNELS")
        s.do("a", "SUBSCRIBE", "x", "y", "xy", replies=3)
        s.do("c", "PSUBSCRIBE", "p*", "q*", replies=2)
        s.do("d", "PSUBSCRIBE", "p*")
        s.do("d", "SSUBSCRIBE", "sh")
        s.do("b", "PUBSUB", "NUMPAT")
        s.do("b", "PUBSUB", "CHANNELS", norm=channel_list)
        s.do("b", "PUBSUB", "CHANNELS", "x*", norm=channel_list)
        s.do("b", "PUBSUB", "CHANNELS", "nomatch")
        s.do("b", "pubsub", "channels", "?", norm=channel_list)
        s.do("b", "PUBSUB", "SHARDCHANNELS")
        s.do("b", "PUBSUB", "NUMSUB")
        s.do("b", "PUBSUB", "NUMSUB", "x", "x", "y", "z")
        s.do("b", "PUBSUB", "SHARDNUMSUB", "sh", "x")
        s.do("b", "PUBSUB", "HELP")
        s.do("b", "pubsub", "help")
        s.do("b", "PUBSUB", "HELP", "x")
        s.do("b", "PUBSUB")
        s.do("b", "PUBSUB", "foo")
        s.do("b", "PUBSUB", "CHANNELS", "a", "b")
        s.do("b", "PUBSUB", "SHARDCHANNELS", "a", "b")
        s.do("b", "PUBSUB", "NUMPAT", "x")
        s.do("b", "PUBLISH", "x")
        s.do("b", "PUBLISH", "x", "y", "z")
        s.do("b", "SPUBLISH", "x")
        s.do("b", "SUBSCRIBE")
        s.do("b", "PSUBSCRIBE")
        s.do("b", "SSUBSCRIBE")
        s.do("b", "PUBLISH", "p1", "m")
        s.read("c")
        s.read("d")
        info = parse(s.conn("b").call("INFO", "stats")).decode()
        s.log.append(("info", sorted(l for l in info.split("\r\n") if l.startswith("pubsub"))))
        s.do("b", "COMMAND", "INFO", "subscribe", "publish", "pubsub|numsub")

    run_both(fresh_redis().port, fresh_skein().port, proto, steps)


def test_self_delivery_resp3(redis_server, skein_server):
    """A RESP3 client publishing to itself gets the message before the command's reply;
    CLIENT REPLY OFF/SKIP silence replies but not pushes."""
    p = "self:"

    def steps(s):
        s.do("a", "SUBSCRIBE", p + "c")
        s.do("a", "PUBLISH", p + "c", "hi", replies=2)
        s.do("a", "PSUBSCRIBE", p + "*")
        s.do("a", "PUBLISH", p + "c", "hi2", replies=3)
        s.do("a", "SSUBSCRIBE", p + "s")
        s.do("a", "SPUBLISH", p + "s", "sh", replies=2)
        s.do("a", "GET", p + "k")
        s.do("a", "SET", p + "k", "v")
        s.do("b", "PUBLISH", p + "c", "other")
        s.read("a", 2)
        s.do("a", "CLIENT", "REPLY", "OFF", replies=0)
        s.do("a", "PUBLISH", p + "c", "silenced", replies=2)
        s.do("a", "SUBSCRIBE", p + "d")
        s.do("a", "GET", p + "k", replies=0)
        s.do("a", "CLIENT", "REPLY", "ON")
        s.do("a", "CLIENT", "REPLY", "SKIP", replies=0)
        s.do("a", "UNSUBSCRIBE", p + "d")
        s.do("a", "PING")
        s.do("a", "HELLO", "2", replies=1, norm=lambda got: [got[0][:2]])
        s.do("a", "PING")
        s.do("b", "PUBLISH", p + "c", "now resp2", replies=1)
        s.read("a", 2)
        s.do("a", "RESET")
        s.do("a", "PUBLISH", p + "c", "after reset")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_reply_skip_resp2(redis_server, skein_server):
    p = "skip2:"

    def steps(s):
        s.do("a", "CLIENT", "REPLY", "SKIP", replies=0)
        s.do("a", "SUBSCRIBE", p + "c")
        s.do("a", "PING")
        s.do("a", "CLIENT", "REPLY", "ON")

    run_both(redis_server.port, skein_server.port, 2, steps)


@pytest.mark.parametrize("proto", [2, 3])
def test_reset_leaves_subscriptions(proto, redis_server, skein_server):
    p = "reset%d:" % proto

    def steps(s):
        s.do("a", "SUBSCRIBE", p + "a")
        s.do("a", "PSUBSCRIBE", p + "p*")
        s.do("a", "SSUBSCRIBE", p + "s")
        s.do("b", "PUBSUB", "NUMSUB", p + "a")
        s.do("b", "PUBSUB", "SHARDNUMSUB", p + "s")
        s.do("b", "PUBLISH", p + "a", "before")
        s.read("a")
        s.do("a", "RESET")
        s.do("b", "PUBSUB", "NUMSUB", p + "a")
        s.do("b", "PUBSUB", "SHARDNUMSUB", p + "s")
        s.do("b", "PUBLISH", p + "a", "x")
        s.do("b", "PUBLISH", p + "pq", "x")
        s.do("b", "SPUBLISH", p + "s", "x")
        s.do("a", "GET", p + "k")
        s.do("a", "PING")
        s.do("a", "UNSUBSCRIBE")
        s.do("a", "GET", p + "k")

    run_both(redis_server.port, skein_server.port, proto, steps)


def client_line(conn, name):
    text = parse(conn.call("CLIENT", "LIST")).decode()
    for line in text.splitlines():
        if " name=%s " % name in line:
            return dict(kv.split("=", 1) for kv in line.split(" "))
    return None


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_client_list_counts_and_flag(kind, redis_server, skein_server):
    port = redis_server.port if kind == "redis" else skein_server.port
    a, b = RawConn(port), RawConn(port)
    a.call("CLIENT", "SETNAME", "subber")
    a.send_raw(encode(["SUBSCRIBE", "cl:x", "cl:y"]) + encode(["PSUBSCRIBE", "cl:*"])
               + encode(["SSUBSCRIBE", "cl:s"]))
    for _ in range(4):
        a.read_reply()
    info = client_line(b, "subber")
    assert (info["flags"], info["sub"], info["psub"], info["ssub"]) == ("P", "2", "1", "1")
    listed = parse(b.call("CLIENT", "LIST", "TYPE", "pubsub")).decode()
    assert " name=subber " in listed
    a.send_raw(encode(["UNSUBSCRIBE"]) + encode(["PUNSUBSCRIBE"]))
    for _ in range(3):
        a.read_reply()
    info = client_line(b, "subber")
    assert (info["flags"], info["sub"], info["psub"], info["ssub"]) == ("P", "0", "0", "1")
    a.call("SUNSUBSCRIBE")
    info = client_line(b, "subber")
    assert (info["flags"], info["sub"], info["psub"], info["ssub"]) == ("N", "0", "0", "0")
    a.close()
    b.close()


def wait_until(pred, tries=200, pause=0.05):
    """Poll a bounded number of times; returns the last value of pred()."""
    for _ in range(tries):
        v = pred()
        if v:
            return v
        time.sleep(pause)
    return pred()


def test_disconnect_and_kill_leave_subscriptions(fresh_skein):
    srv = fresh_skein(workers=4)
    ctl = RawConn(srv.port)
    subs = []
    for i in range(20):
        c = RawConn(srv.port)
        c.send_raw(encode(["SUBSCRIBE", "gone", "gone%d" % i]) + encode(["PSUBSCRIBE", "go*"])
                   + encode(["SSUBSCRIBE", "gs"]))
        for _ in range(4):
            c.read_reply()
        subs.append(c)
    assert parse(ctl.call("PUBSUB", "NUMSUB", "gone")) == [b"gone", 20]
    assert parse(ctl.call("PUBSUB", "NUMPAT")) == 1
    for c in subs[:10]:
        c.close()
    c = subs[10]
    c.call("QUIT")
    assert wait_until(lambda: parse(ctl.call("PUBSUB", "NUMSUB", "gone")) == [b"gone", 9])
    assert parse(ctl.call("CLIENT", "KILL", "TYPE", "pubsub")) == 9
    assert wait_until(lambda: parse(ctl.call("PUBSUB", "NUMSUB", "gone")) == [b"gone", 0])
    assert parse(ctl.call("PUBSUB", "NUMPAT")) == 0
    assert parse(ctl.call("PUBSUB", "CHANNELS")) == []
    assert parse(ctl.call("PUBSUB", "SHARDCHANNELS")) == []
    assert parse(ctl.call("PUBLISH", "gone", "x")) == 0
    info = parse(ctl.call("INFO", "stats")).decode()
    assert "pubsub_channels:0\r\n" in info and "pubsub_patterns:0\r\n" in info
    for c in subs:
        c.close()
    ctl.close()


def test_subscribers_do_not_time_out(fresh_skein):
    srv = fresh_skein()
    ctl = RawConn(srv.port)
    sub = RawConn(srv.port)
    sub.call("SUBSCRIBE", "idle")
    idle = RawConn(srv.port)
    idle.call("PING")
    ctl.call("CONFIG", "SET", "timeout", "1")

    def idle_closed():
        ctl.call("PING")  # stay active ourselves
        return "cmd=ping " not in parse(ctl.call("CLIENT", "LIST", "TYPE", "normal")).decode()

    assert wait_until(idle_closed, tries=100, pause=0.1)
    assert parse(ctl.call("PUBSUB", "NUMSUB", "idle")) == [b"idle", 1]
    assert parse(ctl.call("PUBLISH", "idle", "still here")) == 1
    assert parse(sub.read_reply()) == [b"message", b"idle", b"still here"]
    for c in (ctl, sub, idle):
        c.close()


# --- delivery across workers -------------------------------------------------------

PUBLISHERS = 4
MESSAGES = 1500
CHANNEL_ONLY = 6
WITH_PATTERN = 3


class Subscriber(threading.Thread):
    """Reads every message it expects (bounded by the socket timeout) and records each
    publisher's sequence numbers, per delivery kind."""

    def __init__(self, port, pattern):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.reader = hiredis.Reader()
        self.pattern = pattern
        cmds = [["SUBSCRIBE", "conc"]] + ([["PSUBSCRIBE", "con*"]] if pattern else [])
        self.sock.sendall(b"".join(encode(c) for c in cmds))
        for _ in cmds:
            self.next()
        self.expected = PUBLISHERS * MESSAGES * (2 if pattern else 1)
        self.seen = {}
        self.error = None

    def next(self):
        while True:
            r = self.reader.gets()
            if r is not False:
                return r
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("closed")
            self.reader.feed(data)

    def run(self):
        try:
            for _ in range(self.expected):
                r = self.next()
                kind = r[0]
                pub, seq = r[-1].split(b":")
                self.seen.setdefault((kind, pub), []).append(int(seq))
        except Exception as e:  # reported by the test
            self.error = e


def publisher(port, i, results):
    c = RawConn(port, timeout=30)
    replies = []
    for start in range(0, MESSAGES, 100):
        batch = [["PUBLISH", "conc", "p%d:%d" % (i, n)] for n in range(start, start + 100)]
        replies.extend(parse(r) for r in c.pipeline(batch))
    results[i] = replies
    c.close()


@pytest.mark.parametrize("proto", [2, 3])
def test_silenced_confirmation_comes_before_messages(proto, fresh_skein):
    """Under CLIENT REPLY OFF a subscription's confirmation (a push, sent anyway) comes
    before any message published to the channel once it is registered, as in Redis: it
    goes through the subscriber's inbox ahead of the registration (found by cmd_fuzz's
    subscribe steps; a publisher on another worker could overtake it)."""
    sk = fresh_skein(workers=4)
    for i in range(200):
        sub, pub = RawConn(sk.port), RawConn(sk.port)
        if proto == 3:
            sub.call("HELLO", "3")
        sub.send_raw(encode(["CLIENT", "REPLY", "OFF"]) + encode(["SUBSCRIBE", "q%d" % i]))
        for _ in range(10000):
            if pub.call("PUBLISH", "q%d" % i, "m") != b":0\r\n":
                break
        first = parse(sub.read_reply())
        assert first[0] == b"subscribe", (i, first)
        sub.close()
        pub.close()


def test_delivery_across_workers(fresh_skein):
    srv = fresh_skein(workers=4)
    subs = [Subscriber(srv.port, False) for _ in range(CHANNEL_ONLY)]
    subs += [Subscriber(srv.port, True) for _ in range(WITH_PATTERN)]
    for s in subs:
        s.start()
    results = {}
    pubs = [threading.Thread(target=publisher, args=(srv.port, i, results))
            for i in range(PUBLISHERS)]
    for t in pubs:
        t.start()
    for t in pubs:
        t.join(60)
    for s in subs:
        s.join(60)
    receivers = CHANNEL_ONLY + 2 * WITH_PATTERN
    assert sorted(results) == list(range(PUBLISHERS))
    for i in range(PUBLISHERS):
        assert results[i] == [receivers] * MESSAGES
    want = list(range(MESSAGES))
    for s in subs:
        assert s.error is None, s.error
        kinds = [b"message", b"pmessage"] if s.pattern else [b"message"]
        for kind in kinds:
            for i in range(PUBLISHERS):
                assert s.seen.get((kind, b"p%d" % i)) == want
        assert sum(len(v) for v in s.seen.values()) == s.expected
        # Nothing more arrives: exactly once.
        assert s.reader.gets() is False
        s.sock.setblocking(False)
        with pytest.raises(BlockingIOError):
            s.sock.recv(1)
        s.sock.close()
    ctl = RawConn(srv.port)
    assert parse(ctl.call("PING")) == b"PONG"
    ctl.close()


# --- output buffer limits ----------------------------------------------------------


def slow_subscriber(port, channel):
    """A subscriber with a tiny receive buffer that stops reading after subscribing."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(encode(["SUBSCRIBE", channel]))
    got = b""
    while got.count(b"\r\n") < 6:
        got += s.recv(4096)
    return s


def drained_to_eof(sock, limit=1 << 30):
    """Read what is left until the server closes the connection (bounded)."""
    total = 0
    try:
        while total < limit:
            data = sock.recv(1 << 20)
            if not data:
                return True
            total += len(data)
    except (ConnectionResetError, socket.timeout):
        return False
    return False


def publish_until_gone(ctl, channel, payload, rounds, pause=0.0):
    for _ in range(rounds):
        ctl.call("PUBLISH", channel, payload)
        if parse(ctl.call("PUBSUB", "NUMSUB", channel))[1] == 0:
            return True
        time.sleep(pause)
    return False


def test_pubsub_hard_limit_disconnects_slow_subscriber(fresh_skein):
    srv = fresh_skein(workers=2)
    ctl = RawConn(srv.port)
    assert ctl.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 256kb 0 0") == b"+OK\r\n"
    slow = slow_subscriber(srv.port, "flood")
    assert publish_until_gone(ctl, "flood", b"x" * 65536, rounds=2000)
    assert ctl.call("PING") == b"+PONG\r\n"
    assert drained_to_eof(slow)
    slow.close()
    # The server still delivers to subscribers that read.
    good = RawConn(srv.port)
    good.call("SUBSCRIBE", "flood")
    assert parse(ctl.call("PUBLISH", "flood", "hi")) == 1
    assert parse(good.read_reply()) == [b"message", b"flood", b"hi"]
    good.close()
    ctl.close()


def test_pubsub_soft_limit_disconnects_after_its_seconds(fresh_skein):
    srv = fresh_skein(workers=2)
    ctl = RawConn(srv.port)
    ctl.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 64kb 1")
    slow = slow_subscriber(srv.port, "soft")
    # A normal client is not of the pubsub class: the same output would not close it.
    assert publish_until_gone(ctl, "soft", b"y" * 262144, rounds=200, pause=0.1)
    assert ctl.call("PING") == b"+PONG\r\n"
    assert drained_to_eof(slow)
    slow.close()
    ctl.close()
