"""Client-side caching (CLIENT TRACKING) against redis-server 7.0.15: the same steps on
both servers, replies and invalidation messages compared byte for byte (client ids
replaced by the connection's name), in RESP2 and RESP3. Then a real client library
(redis-py's client-side cache) and, Skein alone, the ordering guarantee across workers:
once a writer has its reply, a caching client's next reply comes after the
invalidation."""
import random
import re
import threading
import time

import pytest

from difftool import run_script
from resp_client import NamedConns, RawConn, compare_sessions, encode, parse


class Session(NamedConns):
    """Named connections to one server and a transcript of what each step got back,
    with client ids replaced by connection names."""

    def __init__(self, port, proto):
        super().__init__(port, proto)
        self.ids = {}

    def cid(self, name):
        """The connection's client id (not logged: it differs between servers)."""
        if name not in self.ids:
            self.ids[name] = parse(self.conn(name).call("CLIENT", "ID"))
        return self.ids[name]

    def norm(self, raw):
        for name, i in self.ids.items():
            raw = raw.replace(b":%d\r\n" % i, b":<" + name.encode() + b">\r\n")
            raw = re.sub(rb"\bredir=%d\b" % i, b"redir=<" + name.encode() + b">", raw)
        return raw

    def do(self, name, *args, replies=1):
        c = self.conn(name)
        c.send_raw(encode(args))
        got = [self.norm(c.read_reply()) for _ in range(replies)]
        self.log.append(("%s> %r" % (name, args), got))
        return got

    def read(self, name, n=1):
        """Read `n` pushed messages on connection `name`."""
        c = self.conn(name)
        self.log.append(("%s< read %d" % (name, n), [self.norm(c.read_reply()) for _ in range(n)]))

    def flags(self, name):
        """CLIENT INFO's flags= and redir= fields."""
        raw = self.conn(name).call("CLIENT", "INFO")
        fields = dict(f.split(b"=", 1) for f in parse(raw).split() if b"=" in f)
        self.log.append(("%s> client info" % name, [fields[b"flags"], self.norm(b"redir=" + fields[b"redir"])]))


def run_both(redis_port, skein_port, proto, steps):
    compare_sessions(Session, redis_port, skein_port, proto, steps)


SUBCOMMANDS = """
CLIENT TRACKINGINFO
CLIENT GETREDIR
CLIENT CACHING yes
CLIENT CACHING maybe
CLIENT TRACKING
CLIENT TRACKING maybe
CLIENT TRACKING on foo
CLIENT TRACKING on PREFIX a
CLIENT TRACKING on OPTIN OPTOUT
CLIENT TRACKING on BCAST OPTIN
CLIENT TRACKING on BCAST OPTOUT
CLIENT TRACKING on REDIRECT 999999
CLIENT TRACKING on REDIRECT notanumber
CLIENT TRACKING on REDIRECT 0
CLIENT TRACKING on REDIRECT -1
CLIENT TRACKING on REDIRECT
CLIENT TRACKING on PREFIX
CLIENT TRACKING on BCAST PREFIX a PREFIX ab
CLIENT TRACKING on BCAST PREFIX ab PREFIX a
CLIENT TRACKING on BCAST PREFIX "" PREFIX x
CLIENT TRACKINGINFO
CLIENT TRACKING on OPTIN
CLIENT TRACKINGINFO
CLIENT CACHING no
CLIENT CACHING yes
CLIENT CACHING yes extra
CLIENT TRACKINGINFO
CLIENT TRACKINGINFO
GET x
CLIENT TRACKINGINFO
CLIENT TRACKING on OPTOUT
CLIENT TRACKING on BCAST
CLIENT TRACKING on OPTIN NOLOOP
CLIENT TRACKINGINFO
CLIENT GETREDIR
CLIENT TRACKING off
CLIENT TRACKINGINFO
CLIENT GETREDIR
CLIENT TRACKING on OPTOUT
CLIENT CACHING yes
CLIENT CACHING no
CLIENT TRACKINGINFO
CLIENT TRACKING on
CLIENT TRACKINGINFO
CLIENT TRACKING off
CLIENT TRACKING on BCAST
CLIENT TRACKINGINFO
CLIENT TRACKING on BCAST PREFIX a
CLIENT TRACKING on BCAST
CLIENT TRACKINGINFO
CLIENT TRACKING off
CLIENT TRACKING on BCAST PREFIX foo PREFIX bar
CLIENT TRACKING on BCAST PREFIX fo
CLIENT TRACKING on BCAST PREFIX barbar
CLIENT TRACKING on BCAST PREFIX baz NOLOOP
CLIENT TRACKINGINFO
CLIENT TRACKING on BCAST OPTIN
CLIENT CACHING yes
CLIENT TRACKING off BCAST PREFIX q
CLIENT TRACKINGINFO
CLIENT TRACKING off REDIRECT 999999
CLIENT TRACKING OFF
CLIENT TRACKING ON BCAST PREFIX k
RESET
CLIENT TRACKINGINFO
CLIENT GETREDIR
CLIENT HELP
"""


@pytest.mark.parametrize("proto", [2, 3])
def test_subcommands_and_errors(proto, redis_server, skein_server):
    failures = run_script(SUBCOMMANDS, redis_server.port, skein_server.port, proto, "tracking")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("proto", [2, 3])
def test_redirect_and_client_flags(proto, redis_server, skein_server):
    def steps(s):
        r = s.cid("r")
        s.cid("t")
        s.flags("t")
        s.do("t", "CLIENT", "TRACKING", "on", "REDIRECT", str(r))
        s.do("t", "CLIENT", "GETREDIR")
        s.do("t", "CLIENT", "TRACKINGINFO")
        s.flags("t")
        s.do("t", "CLIENT", "TRACKING", "on", "REDIRECT", str(r), "REDIRECT", str(r))
        s.do("t", "CLIENT", "TRACKING", "off")
        s.do("t", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:", "REDIRECT", str(r))
        s.flags("t")
        s.do("t", "CLIENT", "TRACKINGINFO")
        # Redirecting to itself is allowed.
        s.do("t", "CLIENT", "TRACKING", "off")
        s.do("t", "CLIENT", "TRACKING", "on", "REDIRECT", str(s.cid("t")))
        s.do("t", "CLIENT", "GETREDIR")
        s.do("t", "CLIENT", "TRACKING", "off")
        s.flags("t")

    run_both(redis_server.port, skein_server.port, proto, steps)


def test_default_mode_invalidations(redis_server, skein_server):
    """RESP3 tracking client: GET then a SET from another connection, MSET, DEL,
    a hash written after HGET, a key read twice invalidated once, a write to a key
    not read."""

    def steps(s):
        s.do("c", "CLIENT", "TRACKING", "on")
        s.do("c", "GET", "dm:a")
        s.do("w", "SET", "dm:a", "1")
        s.read("c")
        s.do("c", "PING")
        s.do("w", "SET", "dm:a", "2")  # no longer tracked: nothing
        s.do("c", "MGET", "dm:a", "dm:b", "dm:c")
        s.do("w", "MSET", "dm:a", "1", "dm:b", "2", "dm:x", "3")
        s.read("c", 2)
        s.do("c", "GET", "dm:c")
        s.do("c", "GET", "dm:c")
        s.do("w", "SET", "dm:c", "v")
        s.read("c")
        s.do("c", "EXISTS", "dm:c")
        s.do("w", "DEL", "dm:c", "dm:nothing")
        s.read("c")
        s.do("c", "HGET", "dm:h", "f")
        s.do("w", "HSET", "dm:h", "f", "v")
        s.read("c")
        s.do("c", "HGETALL", "dm:h")
        s.do("w", "HSET", "dm:h", "f", "v")  # unchanged value still signals the key
        s.read("c")
        s.do("c", "LRANGE", "dm:l", "0", "-1")
        s.do("w", "RPUSH", "dm:l", "a")
        s.read("c")
        s.do("c", "STRLEN", "dm:s")
        s.do("w", "DEL", "dm:s")  # nothing deleted: no invalidation
        s.do("w", "APPEND", "dm:s", "x")
        s.read("c")
        # Writes by the tracking client itself reach it after its reply.
        s.do("c", "GET", "dm:own")
        s.do("c", "SET", "dm:own", "1", replies=2)
        s.do("c", "PING")
        s.do("c", "CLIENT", "TRACKING", "off")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_resp2_without_redirect_gets_nothing(redis_server, skein_server):
    def steps(s):
        s.do("c", "CLIENT", "TRACKING", "on")
        s.do("c", "GET", "r2:a")
        s.do("w", "SET", "r2:a", "1")
        s.do("c", "PING")
        s.do("c", "GET", "r2:a")
        s.do("w", "FLUSHDB")
        s.do("c", "PING")

    run_both(redis_server.port, skein_server.port, 2, steps)


def test_expiry_and_transactions(redis_server, skein_server):
    def steps(s):
        s.do("w", "SET", "ex:a", "1", "PX", "30")
        s.do("c", "CLIENT", "TRACKING", "on")
        s.do("c", "GET", "ex:a")
        time.sleep(0.1)
        s.do("w", "EXISTS", "ex:a")  # found expired: invalidated
        s.read("c")
        s.do("c", "GET", "ex:b")
        s.do("w", "SET", "ex:b", "1")
        s.read("c")
        s.do("c", "GET", "ex:b")
        s.do("w", "EXPIRE", "ex:b", "100")
        s.read("c")
        # Found expired by the cron's active expiry.
        s.do("w", "SET", "ex:act", "1", "PX", "50")
        s.do("c", "GET", "ex:act")
        s.read("c")
        s.do("c", "MULTI")
        s.do("c", "GET", "ex:m1")
        s.do("c", "GET", "ex:m2")
        s.do("c", "EXEC")
        s.do("w", "MULTI")
        s.do("w", "SET", "ex:m1", "1")
        s.do("w", "SET", "ex:m2", "1")
        s.do("w", "EXEC")
        s.read("c", 2)
        s.do("c", "PING")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_flush(redis_server, skein_server):
    def steps(s):
        s.do("c", "CLIENT", "TRACKING", "on")
        s.do("b", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "fl:")
        s.do("c", "GET", "fl:a")
        s.do("w", "FLUSHDB")
        s.read("c")
        s.read("b")
        s.do("c", "PING")
        s.do("w", "FLUSHALL")
        s.read("c")
        s.read("b")
        # The table was emptied: this write invalidates nothing in default mode.
        s.do("w", "SET", "fl:a", "1")
        s.read("b")
        s.do("c", "PING")
        # The flushing client itself gets its null after the reply.
        s.do("c", "FLUSHALL", replies=2)
        s.read("b")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_noloop(redis_server, skein_server):
    def steps(s):
        s.do("c", "CLIENT", "TRACKING", "on", "NOLOOP")
        s.do("c", "GET", "nl:a")
        s.do("c", "SET", "nl:a", "1")
        s.do("c", "PING")
        s.do("c", "GET", "nl:a")
        s.do("w", "SET", "nl:a", "2")
        s.read("c")
        s.do("b", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "nl:", "NOLOOP")
        s.do("b", "MSET", "nl:x", "1", "nl:y", "2")
        s.do("b", "PING")
        s.do("w", "SET", "nl:z", "3")
        s.read("b")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_optin_optout(redis_server, skein_server):
    def steps(s):
        s.do("i", "CLIENT", "TRACKING", "on", "OPTIN")
        s.do("i", "GET", "oi:a")  # not cached
        s.do("i", "CLIENT", "CACHING", "yes")
        s.do("i", "GET", "oi:b")  # cached
        s.do("i", "GET", "oi:c")  # caching applied to one command only
        s.do("i", "CLIENT", "CACHING", "yes")
        s.do("i", "MULTI")
        s.do("i", "GET", "oi:d")
        s.do("i", "GET", "oi:e")
        s.do("i", "EXEC")
        s.do("w", "MSET", "oi:a", "1", "oi:b", "1", "oi:c", "1", "oi:d", "1", "oi:e", "1")
        s.read("i", 3)
        s.do("i", "PING")
        s.do("o", "CLIENT", "TRACKING", "on", "OPTOUT")
        s.do("o", "GET", "oo:a")  # cached
        s.do("o", "CLIENT", "CACHING", "no")
        s.do("o", "GET", "oo:b")  # not cached
        s.do("o", "GET", "oo:c")  # cached
        s.do("w", "MSET", "oo:a", "1", "oo:b", "1", "oo:c", "1")
        s.read("o", 2)
        s.do("o", "PING")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_caching_dropped_by_unknown_or_failed_commands(redis_server, skein_server):
    """CLIENT CACHING holds for the next command unless that command is an existing CLIENT
    subcommand (even one that fails): `CLIENT <unknown>`, `CLIENT` alone, an unknown
    command and one that fails its arity check all drop it, as Redis's resetClient does
    (c->cmd is NULL, or the container, whose proc is not clientCommand)."""

    def steps(s):
        for name, mode, set_it in (("i", "OPTIN", "yes"), ("o", "OPTOUT", "no")):
            s.do(name, "CLIENT", "TRACKING", "on", mode)
            for n, between in enumerate((
                ["CLIENT", "NOSUCHSUB"],
                ["CLIENT", "NOSUCHSUB", "arg"],
                ["CLIENT"],
                ["NOSUCHCOMMAND"],
                ["GET"],
                ["SET", "cf:x", "1", "BADOPTION"],
                ["CLIENT", "CACHING"],  # exists, fails its arity check: kept
                ["CLIENT", "KILL", "ID", "999999"],  # exists, fails: kept
                ["CLIENT", "GETNAME"],
            )):
                s.do(name, "CLIENT", "CACHING", set_it)
                s.do(name, *between)
                s.do(name, "CLIENT", "TRACKINGINFO")
                s.do(name, "GET", "cf:%s%d" % (name, n))
            s.do("w", "MSET", *[a for n in range(9) for a in ("cf:%s%d" % (name, n), "1")])
            s.log.append(("%s pushes" % name, [s.norm(r) for r in drain(s.conn(name))]))

    run_both(redis_server.port, skein_server.port, 3, steps)


def drain(conn):
    """Replies already sent to `conn`: what is left after a PING (which gets its PONG
    only after every push queued before it)."""
    got = []
    conn.send_raw(encode(["PING"]))
    while True:
        r = conn.read_reply()
        if r == b"+PONG\r\n":
            return got
        got.append(r)


def test_bcast(redis_server, skein_server):
    def steps(s):
        s.do("b", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "bc:a", "PREFIX", "bc:b")
        s.do("w", "SET", "bc:a1", "1")
        s.read("b")
        s.do("w", "MSET", "bc:b2", "1", "bc:a2", "2", "bc:c", "3", "bc:b1", "4", "bc:a2", "5")
        s.read("b", 2)
        s.do("w", "HSET", "bc:bh", "f", "v")
        s.read("b")
        s.do("w", "SET", "bc:c", "4")
        s.do("b", "PING")
        s.do("b2", "CLIENT", "TRACKING", "on", "BCAST")
        s.do("w", "DEL", "bc:a1")
        s.read("b")
        s.read("b2")
        # A pipeline read at once: its keys share one message per prefix.
        s.log.append(("pipeline", s.conn("w").pipeline(
            [["SET", "bc:a3", "1"], ["SET", "bc:b3", "1"], ["INCR", "bc:a0"]])))
        s.read("b", 2)
        s.read("b2")
        s.do("b", "CLIENT", "TRACKING", "off")
        s.do("w", "SET", "bc:a1", "x")
        s.read("b2")
        s.do("b", "PING")

    run_both(redis_server.port, skein_server.port, 3, steps)


@pytest.mark.parametrize("target", ["resp2-subscriber", "resp3"])
def test_redirect(target, redis_server, skein_server):
    """Invalidations for a RESP2 tracking client go to its redirect client: as pub/sub
    messages on __redis__:invalidate to a RESP2 subscriber, as pushes to a RESP3 one."""

    def steps(s):
        r = s.cid("r")
        if target == "resp3":
            s.do("r", "HELLO", "3")
        else:
            s.do("r", "SUBSCRIBE", "__redis__:invalidate")
        s.do("c", "CLIENT", "TRACKING", "on", "REDIRECT", str(r))
        s.do("c", "GET", "rd:a")
        s.do("w", "SET", "rd:a", "1")
        s.read("r")
        s.do("c", "GET", "rd:a")
        s.do("w", "FLUSHALL")
        s.read("r")
        s.do("b", "CLIENT", "TRACKING", "on", "REDIRECT", str(r), "BCAST", "PREFIX", "rd:")
        s.do("w", "MSET", "rd:x", "1", "rd:y", "2")
        s.read("r")
        s.do("c", "PING")
        s.do("r", "PING")

    run_both(redis_server.port, skein_server.port, 2, steps)


def test_broken_redirect(redis_server, skein_server):
    def steps(s):
        r = s.cid("r")
        s.cid("c")
        s.do("c", "HELLO", "3")
        s.do("c", "CLIENT", "TRACKING", "on", "REDIRECT", str(r))
        s.do("c", "GET", "br:a")
        s.conns.pop("r").close()
        deadline = time.time() + 5
        while b"id=%d " % r in parse(s.conn("w").call("CLIENT", "LIST")) and time.time() < deadline:
            time.sleep(0.01)
        s.flags("c")
        s.do("w", "SET", "br:a", "1")
        s.read("c")
        s.flags("c")
        s.do("c", "CLIENT", "TRACKINGINFO")
        s.do("c", "CLIENT", "GETREDIR")
        # A RESP2 client whose redirect is gone is only flagged.
        s.do("c2", "CLIENT", "TRACKING", "on", "REDIRECT", str(s.cid("w")))
        s.do("c2", "GET", "br:b")
        s.conns.pop("w").close()
        time.sleep(0.2)
        s.do("x", "SET", "br:b", "1")
        s.do("c2", "PING")
        s.flags("c2")

    run_both(redis_server.port, skein_server.port, 2, steps)


def test_redirect_killed_is_broken_at_once(fresh_redis, fresh_skein):
    """CLIENT KILL of the redirect client and a write in the same pipeline: the
    invalidation finds the redirect gone (Redis frees the killed client at once, and
    sendTrackingMessage's lookupClientByID fails) even though Skein's worker (one, shared
    by every connection here) has yet to close it: broken_redirect, and in RESP3 a
    tracking-redir-broken push instead of a message lost in the dead client's inbox."""
    rs, sk = fresh_redis(), fresh_skein(workers=1)

    def steps(s):
        r = s.cid("r")
        s.cid("c")
        for name in ("r", "c"):
            s.conn(name).call("HELLO", "3")  # not logged: its reply holds the id
        s.do("c", "CLIENT", "TRACKING", "on", "REDIRECT", str(r))
        s.do("c", "GET", "bk:a")
        s.do("c2", "CLIENT", "TRACKING", "on", "REDIRECT", str(r), "BCAST", "PREFIX", "bk:")
        r_conn = s.conns.pop("r")  # kept open: the kill closes it
        s.log.append(("kill and write", s.conn("w").pipeline(
            [["CLIENT", "KILL", "ID", str(r)], ["SET", "bk:a", "1"]])))
        assert s.log[-1][1][0] == b":1\r\n"
        s.read("c")
        s.flags("c")
        s.do("c", "CLIENT", "TRACKINGINFO")
        s.do("c2", "PING")
        s.flags("c2")
        s.do("c", "PING")
        r_conn.close()

    run_both(rs.port, sk.port, 2, steps)


def test_info_counters(fresh_redis, fresh_skein):
    rs, sk = fresh_redis(), fresh_skein(workers=4)

    def counters(s, name):
        text = parse(s.conn(name).call("INFO")).decode()
        got = {}
        for line in text.splitlines():
            k, _, v = line.partition(":")
            if k.startswith("tracking_"):
                got[k] = v
        s.log.append(("info", [sorted(got.items())]))

    def steps(s):
        counters(s, "w")
        s.do("a", "CLIENT", "TRACKING", "on")
        s.do("b", "CLIENT", "TRACKING", "on")
        s.do("a", "MGET", "ic:1", "ic:2", "ic:3")
        s.do("b", "GET", "ic:1")
        s.do("p", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x", "PREFIX", "y")
        s.do("q", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "y")
        counters(s, "w")
        s.do("w", "SET", "ic:1", "v")
        counters(s, "w")
        s.do("a", "CLIENT", "TRACKING", "off")
        s.do("p", "CLIENT", "TRACKING", "off")
        counters(s, "w")
        s.do("w", "FLUSHALL")
        counters(s, "w")

    run_both(rs.port, sk.port, 2, steps)


def table_limit_run(port, before, after):
    """A RESP3 tracking client `c` and a plain client `w`: before(c, w), then after(c, w);
    then the kinds of what `c` receives up to a PING's reply, and the table's size."""
    c, w = RawConn(port), RawConn(port)
    try:
        before(c, w)
        c.call("HELLO", "3")
        c.call("CLIENT", "TRACKING", "on")
        after(c, w)
        c.send_raw(encode(["PING"]))
        kinds = []
        while True:
            r = c.read_reply()
            kinds.append(r[:1])
            if r == b"+PONG\r\n":
                break
        info = parse(w.call("INFO", "stats")).decode()
        return kinds, int(re.search(r"tracking_total_keys:(\d+)", info).group(1))
    finally:
        c.close()
        w.close()


def test_table_max_keys(fresh_redis, fresh_skein):
    """Past tracking-table-max-keys, random keys leave the table with an invalidation
    (which keys is random: compare the kinds of replies and the table's size)."""

    def before(c, w):
        w.call("CONFIG", "SET", "tracking-table-max-keys", "2")

    def after(c, w):
        c.send_raw(b"".join(encode(["GET", "mk:%d" % i]) for i in range(5)))

    seen = [table_limit_run(s.port, before, after) for s in (fresh_redis(), fresh_skein())]
    assert seen[0] == seen[1]


def test_table_max_keys_lowered(fresh_redis, fresh_skein):
    """CONFIG SET lowering tracking-table-max-keys: the next command (of any client)
    brings the table within it, invalidating the keys it drops."""

    def after(c, w):
        c.call("MGET", *["ml:%d" % i for i in range(6)])
        w.call("CONFIG", "SET", "tracking-table-max-keys", "2")
        w.call("PING")

    seen = [table_limit_run(s.port, lambda c, w: None, after)
            for s in (fresh_redis(), fresh_skein())]
    assert seen[0] == seen[1]
    assert seen[0][1] == 2


def test_redis_py_client_side_cache(redis_server, skein_server):
    """redis-py's own client-side cache (RESP3): a cached GET is served locally until
    another client's write invalidates it. redis-py asks for Redis 7.4; 7.0 speaks the
    same protocol for this."""
    redis = pytest.importorskip("redis")
    cache_mod = pytest.importorskip("redis.cache")
    import redis.connection as rc

    if not hasattr(rc, "CacheProxyConnection"):
        pytest.skip("redis-py without client-side caching")
    old = rc.CacheProxyConnection.MIN_ALLOWED_VERSION, rc.HIREDIS_AVAILABLE
    rc.CacheProxyConnection.MIN_ALLOWED_VERSION = "7.0.0"
    # With hiredis installed, redis-py 5.2 reads past an invalidation push while waiting
    # for the next reply (against Redis as well): the pure-Python path handles it.
    rc.HIREDIS_AVAILABLE = False
    try:
        for port in (redis_server.port, skein_server.port):
            # The cache needs the pure-Python RESP3 parser (for invalidation pushes).
            pool = redis.ConnectionPool(
                port=port,
                protocol=3,
                parser_class=rc._RESP3Parser,
                cache_config=cache_mod.CacheConfig(),
            )
            r = redis.Redis(connection_pool=pool)
            w = redis.Redis(port=port)
            try:
                w.set("py:k", "1")
                assert r.get("py:k") == b"1"
                cache = r.get_cache()
                assert cache.size == 1
                assert r.get("py:k") == b"1"
                w.set("py:k", "2")
                deadline = time.time() + 5
                got = r.get("py:k")
                while got != b"2" and time.time() < deadline:
                    time.sleep(0.01)
                    got = r.get("py:k")
                assert got == b"2"
            finally:
                r.close()
                w.close()
    finally:
        rc.CacheProxyConnection.MIN_ALLOWED_VERSION, rc.HIREDIS_AVAILABLE = old


def test_invalidation_before_next_reply_across_workers(fresh_skein):
    """--workers 4: a RESP3 client caches a key; a client on another worker writes it;
    once the writer has its reply, the caching client's next reply must come after the
    invalidation push. Default mode and BCAST."""
    sk = fresh_skein(workers=4)
    conns = [RawConn(sk.port) for _ in range(8)]
    try:
        for c in conns:
            c.call("HELLO", "3")
        # CLIENT LIST does not show workers: several pairs, which the acceptor spreads
        # over the 4 workers.
        pairs = [(conns[i], conns[i + 1]) for i in range(0, 8, 2)]
        for n, (c, w) in enumerate(pairs):
            mode = ["on"] if n % 2 == 0 else ["on", "BCAST", "PREFIX", "ord%d:" % n]
            assert c.call("CLIENT", "TRACKING", *mode) == b"+OK\r\n"
            key = "ord%d:k" % n
            for i in range(150):
                c.call("GET", key)
                assert w.call("SET", key, str(i)) == b"+OK\r\n"
                c.send_raw(encode(["PING"]))
                first = c.read_reply()
                assert parse(first) == [b"invalidate", [key.encode()]], (n, i, first)
                assert c.read_reply() == b"+PONG\r\n"
    finally:
        for c in conns:
            c.close()


# (setup, reads by the caching client, write by another client): the invalidations the
# write sends (collected up to the caching client's next PONG) must match Redis's.
WRITE_CASES = [
    ([], [["SINTER", "w:s1", "w:s2"]], ["SADD", "w:s2", "a"]),
    ([["SADD", "w:s3", "a"]], [["SMEMBERS", "w:s3"]], ["SREM", "w:s3", "zz"]),
    ([["SADD", "w:s4", "a"]], [["SCARD", "w:s4"]], ["SREM", "w:s4", "a"]),
    ([["SET", "w:r1", "1"]], [["GET", "w:r1"], ["GET", "w:r2"]], ["RENAME", "w:r1", "w:r2"]),
    ([["SET", "w:c1", "1"]], [["TYPE", "w:c2"]], ["COPY", "w:c1", "w:c2"]),
    ([["SET", "w:m1", "1"]], [["TTL", "w:m1"]], ["MOVE", "w:m1", "3"]),
    ([], [["STRLEN", "w:i"]], ["INCR", "w:i"]),
    ([["SET", "w:sr", "abc"]], [["GETRANGE", "w:sr", "0", "-1"]], ["SETRANGE", "w:sr", "1", "x"]),
    ([["SET", "w:nx", "1"]], [["GET", "w:nx"]], ["SET", "w:nx", "2", "NX"]),
    ([], [["GET", "w:gd"]], ["GETDEL", "w:gd"]),
    ([["SET", "w:ge", "1"]], [["GET", "w:ge"]], ["GETEX", "w:ge", "EX", "100"]),
    ([["SET", "w:ge2", "1"]], [["GET", "w:ge2"]], ["GETEX", "w:ge2"]),
    ([], [["PTTL", "w:ex0"]], ["EXPIRE", "w:ex0", "10"]),
    ([["SET", "w:p", "1", "EX", "100"]], [["TTL", "w:p"]], ["PERSIST", "w:p"]),
    ([["RPUSH", "w:l", "a", "b"]], [["LLEN", "w:l"]], ["LPOP", "w:l"]),
    ([["RPUSH", "w:l2", "a"]], [["LINDEX", "w:l2", "0"]], ["LMOVE", "w:l2", "w:l3", "LEFT", "RIGHT"]),
    ([], [["ZSCORE", "w:z", "m"]], ["ZADD", "w:z", "1", "m"]),
    ([["ZADD", "w:z2", "1", "m"]], [["ZRANGE", "w:z2", "0", "-1"]], ["ZADD", "w:z2", "1", "m"]),
    ([["ZADD", "w:z3", "1", "m"]], [["ZCARD", "w:zd"]], ["ZRANGESTORE", "w:zd", "w:z3", "0", "-1"]),
    ([], [["XLEN", "w:x"]], ["XADD", "w:x", "1-1", "f", "v"]),
    ([], [["PFCOUNT", "w:hll"]], ["PFADD", "w:hll", "a"]),
    ([["RPUSH", "w:so", "3", "1"]], [["SORT_RO", "w:so"], ["EXISTS", "w:sd"]], ["SORT", "w:so", "STORE", "w:sd"]),
    ([["HSET", "w:h", "f", "1"]], [["HLEN", "w:h"]], ["HINCRBY", "w:h", "f", "1"]),
    ([["HSET", "w:h2", "f", "1"]], [["HEXISTS", "w:h2", "f"]], ["HDEL", "w:h2", "nope"]),
    ([], [["BITCOUNT", "w:b"]], ["SETBIT", "w:b", "7", "1"]),
    ([["SET", "w:a", "1"], ["SET", "w:b2", "2"]], [["MGET", "w:a", "w:b2"]], ["UNLINK", "w:a", "w:b2"]),
    ([["SET", "w:t", "1"]], [["OBJECT", "ENCODING", "w:t"]], ["APPEND", "w:t", "2"]),
    ([["SET", "w:e", "1"]], [["GET", "w:e"]], ["EVAL", "redis.call('set', KEYS[1], 'x')", "1", "w:e"]),
    ([["SET", "w:e2", "1"]], [["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "w:e2"]], ["SET", "w:e2", "2"]),
    ([["GEOADD", "w:g", "13.36", "38.11", "p"]], [["GEOPOS", "w:g", "p"]], ["GEOADD", "w:g", "15.08", "37.50", "q"]),
]


@pytest.mark.parametrize("case", range(len(WRITE_CASES)))
def test_write_commands_invalidate(case, redis_server, skein_server):
    setup, reads, write = WRITE_CASES[case]

    def steps(s):
        for cmd in setup:
            s.do("w", *cmd)
        s.do("c", "CLIENT", "TRACKING", "on")
        for cmd in reads:
            s.do("c", *cmd)
        s.do("w", *write)
        c = s.conn("c")
        c.send_raw(encode(["PING"]))
        got = []
        while True:
            r = c.read_reply()
            got.append(r)
            if r == b"+PONG\r\n":
                break
        s.log.append(("pushes", got))
        s.do("c", "CLIENT", "TRACKING", "off")
        s.do("w", "FLUSHALL")

    run_both(redis_server.port, skein_server.port, 3, steps)


def test_evicted_keys_invalidate(fresh_redis, fresh_skein):
    rs, sk = fresh_redis(), fresh_skein()

    def steps(s):
        s.do("w", "SET", "ev:a", "1")
        s.do("c", "CLIENT", "TRACKING", "on")
        s.do("c", "GET", "ev:a")
        s.do("w", "CONFIG", "SET", "maxmemory-policy", "allkeys-random")
        s.do("w", "CONFIG", "SET", "maxmemory", "1")
        s.do("w", "SET", "ev:b", "1")
        s.do("w", "CONFIG", "SET", "maxmemory", "0")
        s.read("c")
        s.do("c", "PING")

    run_both(rs.port, sk.port, 3, steps)


def test_no_stale_cache_under_concurrent_writes(fresh_skein):
    """--workers 4: caching clients (default mode and BCAST) read keys that writer
    threads keep changing, and drop what invalidations name. Once the writers are done
    and each caching client has a PING's reply, everything it still holds must equal the
    server's value: no invalidation was lost or came after a reply it should precede."""
    sk = fresh_skein(workers=4)
    keys = ["st:%d" % i for i in range(16)]
    stop = threading.Event()
    errors = []

    def handle(cache, reply):
        v = parse(reply)
        if reply[:1] == b">" and v[0] == b"invalidate":
            if v[1] is None:
                cache.clear()
            else:
                for k in v[1]:
                    cache.pop(k.decode(), None)
            return True
        return False

    def reader(mode, seed, caches):
        rnd = random.Random(seed)
        c = RawConn(sk.port)
        cache = {}
        try:
            c.call("HELLO", "3")
            c.call("CLIENT", "TRACKING", "on", *mode)
            while not stop.is_set():
                k = rnd.choice(keys)
                if k in cache and rnd.random() < 0.5:
                    continue
                c.send_raw(encode(["GET", k]))
                while True:
                    r = c.read_reply()
                    if not handle(cache, r):
                        cache[k] = parse(r)
                        break
            c.send_raw(encode(["PING"]))
            while handle(cache, c.read_reply()):
                pass
            caches.append(cache)
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))
        finally:
            c.close()

    def writer(seed, n):
        rnd = random.Random(seed)
        w = RawConn(sk.port)
        try:
            for i in range(n):
                k = rnd.choice(keys)
                if i % 50 == 49:
                    w.call("DEL", k)
                else:
                    w.call("SET", k, "%d-%d" % (seed, i))
        finally:
            w.close()

    caches = []
    readers = [threading.Thread(target=reader, args=(m, i, caches))
               for i, m in enumerate([(), (), (), ("BCAST", "PREFIX", "st:"), (),
                                      ("BCAST",), ("NOLOOP",), ()])]
    writers = [threading.Thread(target=writer, args=(100 + i, 400)) for i in range(4)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors
    assert len(caches) == len(readers)
    check = RawConn(sk.port)
    try:
        truth = {k: parse(check.call("GET", k)) for k in keys}
    finally:
        check.close()
    for cache in caches:
        stale = {k: (v, truth[k]) for k, v in cache.items() if truth[k] != v}
        assert not stale, stale
