"""COMMAND, INFO, SLOWLOG, LATENCY and DEBUG against redis-server 7.0.15.

COMMAND INFO / COMMAND DOCS must be byte-identical to Redis's for every command in
Skein's table, in RESP2 and RESP3. Rule for containers: Redis lists subcommands in hash
table order (random per process) and Skein lists only those it implements, so the
subcommand lists are compared sorted, Redis's restricted to the names Skein has.
"""
import re
import time

import pytest

from resp_client import RawConn, parse
from resp_tree import canon_docs, canon_info, dump, parse_tree


def conns(*servers, proto=2):
    out = []
    for s in servers:
        c = RawConn(s.port)
        if proto == 3:
            c.call("HELLO", "3")
        out.append(c)
    return out


def skein_commands(conn):
    """Skein's command names: {top-level name: set of its subcommand full names}."""
    names = parse(conn.call("COMMAND", "LIST"))
    table = {}
    for n in names:
        top = n.split(b"|")[0]
        table.setdefault(top, set())
        if b"|" in n:
            table[top].add(n)
    return table


@pytest.mark.parametrize("proto", [2, 3])
def test_command_info_and_docs_match_redis_for_every_command(redis_server, skein_server, proto):
    ref, sk = conns(redis_server, skein_server, proto=proto)
    table = skein_commands(sk)
    assert len(table) > 10
    names = list(table) + [s for subs in table.values() for s in subs]
    for name in names:
        keep = table.get(name)
        a = canon_info(parse_tree(ref.call("COMMAND", "INFO", name))[1][0], keep)
        b = canon_info(parse_tree(sk.call("COMMAND", "INFO", name))[1][0], keep)
        assert dump(a) == dump(b), "COMMAND INFO %r" % name
        a = canon_docs(parse_tree(ref.call("COMMAND", "DOCS", name)), keep)
        b = canon_docs(parse_tree(sk.call("COMMAND", "DOCS", name)), keep)
        assert dump(a) == dump(b), "COMMAND DOCS %r" % name


@pytest.mark.parametrize("proto", [2, 3])
def test_command_without_args_and_count(redis_server, skein_server, proto):
    """Every entry of COMMAND / COMMAND DOCS equals Redis's entry for that name."""
    ref, sk = conns(redis_server, skein_server, proto=proto)
    table = skein_commands(sk)
    everything = parse_tree(sk.call("COMMAND"))[1]
    assert len(everything) == parse(sk.call("COMMAND", "COUNT")) == len(table)
    seen = set()
    for entry in everything:
        name = parse(dump(entry[1][0]))
        seen.add(name)
        want = canon_info(parse_tree(ref.call("COMMAND", "INFO", name))[1][0], table[name])
        assert dump(canon_info(entry, table[name])) == dump(want), name
    assert seen == set(table)
    docs = parse_tree(sk.call("COMMAND", "DOCS"))[1]
    assert len(docs) == 2 * len(table)
    for i in range(0, len(docs), 2):
        name = parse(dump(docs[i]))
        one = ("%1\r\n" if proto == 3 else "*2\r\n").encode()
        mine = canon_docs((b"", [docs[i], docs[i + 1]]), table[name])
        want = canon_docs(parse_tree(ref.call("COMMAND", "DOCS", name)), table[name])
        assert one + b"".join(dump(k) for k in mine[1]) == dump(want), name
    # COMMAND LIST with filters gives a subset of Redis's, the same for our names.
    for args in (["FILTERBY", "ACLCAT", "keyspace"], ["FILTERBY", "ACLCAT", "fast"],
                 ["FILTERBY", "PATTERN", "*ex*"], ["FILTERBY", "ACLCAT", "dangerous"]):
        ours = set(parse(sk.call("COMMAND", "LIST", *args)))
        theirs = set(parse(ref.call("COMMAND", "LIST", *args)))
        all_ours = set(parse(sk.call("COMMAND", "LIST")))
        assert ours == theirs & all_ours, args


def info_sections(text):
    """INFO text -> {section title: {field: value}} in order."""
    out, cur = {}, None
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            cur = out.setdefault(line[2:], {})
        elif line:
            k, v = line.split(":", 1)
            cur[k] = v
    return out


def info(conn, *args):
    return info_sections(parse(conn.call("INFO", *args)))


DYNAMIC = re.compile(r"^(cmdstat_|errorstat_|latency_percentiles_usec_|db\d+$)")


def test_info_fields_are_redis_fields(redis_server, skein_server):
    ref, sk = conns(redis_server, skein_server)
    for c in (ref, sk):
        c.call("SET", "infokey", "v")
        c.call("GET", "infokey")
    for args in ((), ("everything",), ("all",), ("default",), ("server", "clients"),
                 ("commandstats",), ("latencystats", "keyspace")):
        r, s = info(ref, *args), info(sk, *args)
        # Same sections in the same order; Skein may add its own (Threads).
        assert [t for t in s if t != "Threads"] == list(r), args
        for title, fields in r.items():
            for name in fields:
                if not DYNAMIC.match(name):
                    assert name in s[title], "%s: %s missing" % (title, name)
    s = info(sk, "everything")
    assert s["Replication"]["role"] == "master"
    assert s["Replication"]["connected_slaves"] == "0"
    assert s["Server"]["redis_version"] == "7.0.15"
    assert int(s["Memory"]["used_memory"]) > 0
    assert int(s["Memory"]["used_memory_rss"]) > 0
    assert re.match(r"^\d+\.\d\dM$|^\d+\.\d\dK$", s["Memory"]["used_memory_human"])
    assert re.match(r"^\d+\.\d{6}$", s["CPU"]["used_cpu_user"])
    assert re.match(r"^\d+\.\d{6}$", s["Threads"]["worker0_cpu_user"])
    for k in ("worker0_cpu_sys", "worker0_commands", "worker0_clients",
              "worker0_net_input_bytes", "worker1_commands"):
        assert k in s["Threads"], k
    assert "Commandstats" not in info(sk)
    assert "Latencystats" not in info(sk, "default")
    assert set(info(sk, "SERVER")) == {"Server"}


def test_info_values_move(fresh_skein):
    s = fresh_skein()
    c = RawConn(s.port)
    c.call("CONFIG", "RESETSTAT")
    before = info(c, "stats")["Stats"]
    for i in range(5):
        c.call("SET", "k%d" % i, "v")
    c.call("EXPIRE", "k0", 100)
    c.call("GET", "k1")
    c.call("GET", "nokey")
    c.call("GET")  # arity error: rejected
    c.call("INCR", "k1")  # failed: not an integer
    st = info(c, "everything")
    assert st["Keyspace"]["db0"].startswith("keys=5,expires=1,avg_ttl=")
    assert 0 < int(st["Keyspace"]["db0"].rsplit("=", 1)[1]) <= 100000
    cs = st["Commandstats"]
    assert re.match(r"^calls=5,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,failed_calls=0$",
                    cs["cmdstat_set"])
    assert cs["cmdstat_get"].startswith("calls=2,") and cs["cmdstat_get"].endswith(
        "rejected_calls=1,failed_calls=0")
    assert cs["cmdstat_incr"].endswith("rejected_calls=0,failed_calls=1")
    assert st["Errorstats"] == {"errorstat_ERR": "count=2"}
    assert re.match(r"^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$",
                    st["Latencystats"]["latency_percentiles_usec_set"])
    assert int(st["Stats"]["total_commands_processed"]) > int(before["total_commands_processed"])
    assert int(st["Stats"]["keyspace_hits"]) >= 1 and int(st["Stats"]["keyspace_misses"]) >= 1
    assert int(st["Stats"]["total_error_replies"]) == 2
    c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99.99")
    c.call("SET", "x", "y")
    assert re.match(r"^p50=[\d.]+,p99\.99=[\d.]+$",
                    info(c, "latencystats")["Latencystats"]["latency_percentiles_usec_set"])
    c.call("CONFIG", "RESETSTAT")
    st = info(c, "everything")
    assert "cmdstat_set" not in st["Commandstats"]
    assert st["Errorstats"] == {}
    assert "latency_percentiles_usec_set" not in st["Latencystats"]
    assert st["Stats"]["total_error_replies"] == "0"
    c.close()


def slowlog_entries(conn):
    return parse(conn.call("SLOWLOG", "GET", "-1"))


def test_slowlog_like_redis(fresh_skein, fresh_redis):
    servers = [fresh_redis(["--slowlog-log-slower-than", "0", "--slowlog-max-len", "5"]),
               fresh_skein(["--slowlog-log-slower-than", "0", "--slowlog-max-len", "5"])]
    results = []
    for srv in servers:
        c = RawConn(srv.port)
        c.call("SLOWLOG", "RESET")
        c.call("SET", "a", "x" * 200)
        c.call("DEL", *["k%d" % i for i in range(40)])
        c.call("PING")
        entries = slowlog_entries(c)
        # SLOWLOG GET itself was logged after it ran.
        assert parse(c.call("SLOWLOG", "LEN")) == len(entries) + 1
        results.append(entries)
        for e in entries:
            assert isinstance(e[0], int) and abs(e[1] - time.time()) < 60 and e[2] >= 0
            assert re.match(rb"^127\.0\.0\.1:\d+$", e[4]) and e[5] == b""
        # ids increase, newest first
        ids = [e[0] for e in entries]
        assert ids == sorted(ids, reverse=True)
        for _ in range(10):
            c.call("PING")
        assert parse(c.call("SLOWLOG", "LEN")) == 5
        assert len(parse(c.call("SLOWLOG", "GET", "2"))) == 2
        assert len(parse(c.call("SLOWLOG", "GET"))) == 5
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        c.call("SLOWLOG", "RESET")
        c.call("PING")
        assert parse(c.call("SLOWLOG", "LEN")) == 0
        c.close()
    argvs = [[e[3] for e in entries] for entries in results]
    assert argvs[0] == argvs[1]
    big = [a for a in argvs[1] if a[0] == b"SET"][0]
    assert big[2] == b"x" * 128 + b"... (72 more bytes)"
    dels = [a for a in argvs[1] if a[0] == b"DEL"][0]
    assert len(dels) == 32 and dels[-1] == b"... (10 more arguments)"


def test_latency_monitor(fresh_skein, fresh_redis):
    for srv in (fresh_redis(["--latency-monitor-threshold", "5"]),
                fresh_skein(["--latency-monitor-threshold", "5"])):
        c = RawConn(srv.port)
        assert parse(c.call("LATENCY", "LATEST")) == []
        c.call("DEBUG", "SLEEP", "0.03")
        latest = parse(c.call("LATENCY", "LATEST"))
        assert len(latest) == 1
        name, when, ms, worst = latest[0]
        assert name == b"command" and abs(when - time.time()) < 60 and ms >= 30 and worst == ms
        hist = parse(c.call("LATENCY", "HISTORY", "command"))
        assert hist == [[when, ms]]
        g = parse(c.call("LATENCY", "GRAPH", "command")).decode()
        lines = g.split("\n")
        assert lines[0] == "command - high %d ms, low %d ms (all time high %d ms)" % (ms, ms, ms)
        assert lines[1] == "-" * 80 and lines[2:6] == [" ", " ", " ", "_"]
        doc = parse(c.call("LATENCY", "DOCTOR")).decode()
        assert doc.startswith("Dave, I have observed latency spikes in this Redis instance.")
        assert "1. command: 1 latency spikes (average %dms, mean deviation 0ms, period 1.00 sec)." % ms in doc
        assert "- Check your Slow Log" in doc
        assert parse(c.call("LATENCY", "RESET", "command", "nosuch")) == 1
        assert parse(c.call("LATENCY", "LATEST")) == []
        c.call("SET", "a", "b")
        c.call("SET", "a", "c")
        h = parse(c.call("LATENCY", "HISTOGRAM", "set", "nosuch"))
        assert h[0] == b"set" and h[1][0] == b"calls" and h[1][1] == 2
        assert h[1][2] == b"histogram_usec" and sum(1 for _ in h[1][3]) > 0
        c.close()


@pytest.mark.parametrize("mode", ["no", "local"])
def test_enable_debug_command(fresh_skein, fresh_redis, mode):
    r = fresh_redis(["--enable-debug-command", mode])
    s = fresh_skein(["--enable-debug-command", mode])
    a, b = RawConn(r.port).call("DEBUG", "SLEEP", "0"), RawConn(s.port).call("DEBUG", "SLEEP", "0")
    assert a == b
    assert (a == b"+OK\r\n") == (mode == "local")


def test_debug_set_active_expire(fresh_skein):
    c = RawConn(fresh_skein().port)
    c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    c.call("SET", "k", "v", "PX", "50")
    time.sleep(0.5)
    assert parse(c.call("DBSIZE")) == 1  # not expired actively
    assert parse(c.call("GET", "k")) is None  # expired on access
    assert parse(c.call("DBSIZE")) == 0
    c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    c.call("SET", "k", "v", "PX", "50")
    for _ in range(100):
        if parse(c.call("DBSIZE")) == 0:
            break
        time.sleep(0.05)
    assert parse(c.call("DBSIZE")) == 0


def test_debug_object(redis_server, skein_server):
    ref, sk = conns(redis_server, skein_server)
    pat = re.compile(rb"^\+Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\w+) "
                     rb"serializedlength:(\d+) lru:\d+ lru_seconds_idle:\d+\r\n$")
    for value in (b"1", b"hello", b"12345678901234", b"-5", b"x" * 20, b"99999"):
        got = []
        for c in (ref, sk):
            c.call("SET", "dobj", value)
            m = pat.match(c.call("DEBUG", "OBJECT", "dobj"))
            assert m, value
            got.append(m.groups())
        assert got[0] == got[1], value
    assert ref.call("DEBUG", "OBJECT", "nokey") == sk.call("DEBUG", "OBJECT", "nokey")


def test_debug_sleep_and_change_repl_id(skein_server):
    c = RawConn(skein_server.port)
    before = info(c, "replication")["Replication"]["master_replid"]
    t = time.time()
    assert c.call("DEBUG", "SLEEP", "0.2") == b"+OK\r\n"
    assert time.time() - t >= 0.19
    assert c.call("DEBUG", "CHANGE-REPL-ID") == b"+OK\r\n"
    after = info(c, "replication")["Replication"]["master_replid"]
    assert after != before and re.match(r"^[0-9a-f]{40}$", after)


def test_slowlog_redacts_secrets_like_redis(fresh_redis, fresh_skein):
    """AUTH/HELLO passwords and sensitive CONFIG SET values appear as "(redacted)"."""
    import redis as redis_py
    logs = []
    for srv in (fresh_redis(), fresh_skein()):
        r = redis_py.Redis(port=srv.port)
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()
        try:
            r.execute_command("AUTH", "nosuchpassword")
        except (redis_py.ResponseError, redis_py.AuthenticationError):
            pass
        r.execute_command("CONFIG", "SET", "masterauth", "s3cret")
        entries = r.execute_command("SLOWLOG", "GET", "10")
        logs.append(sorted(tuple(e[3]) for e in entries))
        r.close()
    assert logs[0] == logs[1]
    flat = [a for e in logs[1] for a in e]
    assert b"nosuchpassword" not in flat and b"s3cret" not in flat


def test_debug_object_fields_match_redis(redis_server, skein_server):
    """refcount, encoding and serializedlength (the RDB length, LZF-compressed when that
    helps) as Redis reports them; the address and LRU fields are per process."""
    import redis as redis_py
    values = ["1", "9999", "10000", "-5", "hello", "ab" * 100, "x" * 44, "x" * 45,
              "123456789012345678", "3.14"]
    seen = []
    for srv in (redis_server, skein_server):
        r = redis_py.Redis(port=srv.port)
        fields = []
        for i, v in enumerate(values):
            r.set("dbgobj:%d" % i, v)
            line = r.execute_command("DEBUG", "OBJECT", "dbgobj:%d" % i)
            if isinstance(line, bytes):
                line = line.decode()
            kv = dict(part.split(":", 1) for part in line.split()[1:])
            fields.append((kv["refcount"], kv["encoding"], kv["serializedlength"]))
        r.close()
        seen.append(fields)
    assert seen[0] == seen[1]


def test_active_expiry_sweeps_keys_set_together(fresh_redis, fresh_skein):
    """Keys with a long TTL set first and keys with a short TTL set after them (so the
    expiring ones lie together in each shard's TTL index) are all reclaimed by the active
    expiry cycle alone, on both servers, and `expired_stale_perc` reports a share."""
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        long_ttl = [("SET", "long:%d" % i, "v", "EX", "1000") for i in range(20000)]
        short_ttl = [("SET", "short:%d" % i, "v", "PX", "100") for i in range(20000)]
        for batch in (long_ttl, short_ttl):
            for i in range(0, len(batch), 1000):
                c.pipeline(batch[i:i + 1000])
        time.sleep(0.2)
        assert parse(c.call("DBSIZE")) == 40000
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        for _ in range(300):
            if parse(c.call("DBSIZE")) == 20000:
                break
            time.sleep(0.05)
        assert parse(c.call("DBSIZE")) == 20000, srv.kind
        info = c.call("INFO", "stats").decode()
        fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
        assert fields["expired_keys"] == "20000"
        assert float(fields["expired_stale_perc"]) >= 0.0
