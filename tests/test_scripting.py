"""Lua scripting beyond the differential scripts (tests/scripts/eval_*.txt):

* redis-py's `register_script` helper (EVALSHA, falling back to EVAL after SCRIPT FLUSH)
  from a pool of connections spread over every worker: the script cache is one for the
  server;
* transfers between accounts by EVAL from many clients on all workers while checkers sum
  the balances (by a script and by MGET): the total never changes;
* a script reading and writing keys it did not declare races plain INCRs of those keys
  and stays atomic (no lost update), including under the contention that makes a run
  restart holding its whole database;
* effects propagated wrapped in MULTI/EXEC (DEBUG PROPAGATION);
* busy scripts: past busy-reply-threshold, clients of the script's keys get -BUSY while
  clients of other keys are served; SCRIPT KILL stops it (-UNKILLABLE once it wrote) and
  SHUTDOWN NOSAVE stops the server.

Bounded by counts; no assertion depends on timing. Servers are stopped by PID by the
fixtures.
"""
import random
import signal
import threading
import time

import redis

from resp_client import RawConn, parse
from test_multi_concurrency import run_threads

WORKERS = 4


def test_register_script_on_every_worker(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    pool = redis.ConnectionPool(port=server.port, max_connections=16)
    clients = [redis.Redis(connection_pool=pool) for _ in range(4)]
    # Hold several connections at once so the pool spreads them over the workers.
    conns = [pool.get_connection("PING") for _ in range(12)]
    for c in conns:
        pool.release(c)
    incr_expire = clients[0].register_script(
        "local v = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
        "redis.call('EXPIRE', KEYS[1], ARGV[2])\n"
        "return v")
    total = 0
    for i in range(40):
        n = i % 5 + 1
        total += n
        assert incr_expire(keys=["ctr"], args=[n, 100], client=clients[i % 4]) == total
    assert 0 < clients[1].ttl("ctr") <= 100
    clients[2].script_flush()
    # The helper sees NOSCRIPT and loads the script again.
    assert incr_expire(keys=["ctr"], args=[1, 100]) == total + 1
    assert clients[3].script_exists(incr_expire.sha) == [True]
    pool.disconnect()


def test_script_loaded_once_runs_on_all_workers(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    loader = RawConn(server.port)
    sha = parse(loader.call("SCRIPT", "LOAD", "return ARGV[1] .. '!'"))
    conns = [RawConn(server.port) for _ in range(3 * WORKERS)]
    try:
        for i, c in enumerate(conns):
            assert parse(c.call("EVALSHA", sha, "0", str(i))) == b"%d!" % i
    finally:
        for c in conns + [loader]:
            c.close()


ACCOUNTS = [b"acct:%d" % i for i in range(32)]
START = 1000
TRANSFER = """
local a, b, n = KEYS[1], KEYS[2], tonumber(ARGV[1])
local have = tonumber(redis.call('GET', a))
if have < n then return 0 end
redis.call('DECRBY', a, n)
redis.call('INCRBY', b, n)
return 1
"""
SUM = """
local s = 0
for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('GET', k)) end
return s
"""


def test_transfers_by_eval_keep_the_total(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    setup = RawConn(server.port)
    setup.call("MSET", *[x for k in ACCOUNTS for x in (k, START)])
    total = START * len(ACCOUNTS)

    def transferer(tid):
        def body():
            rng = random.Random(tid)
            conn = RawConn(server.port)
            try:
                for _ in range(300):
                    a, b = rng.sample(ACCOUNTS, 2)
                    r = parse(conn.call("EVAL", TRANSFER, "2", a, b, str(rng.randint(1, 80))))
                    assert r in (0, 1), r
            finally:
                conn.close()
        return body

    def checker(cid):
        def body():
            conn = RawConn(server.port)
            try:
                for n in range(400):
                    if (n + cid) % 2:
                        seen = parse(conn.call("EVAL", SUM, str(len(ACCOUNTS)), *ACCOUNTS))
                    else:
                        seen = sum(int(v) for v in parse(conn.call("MGET", *ACCOUNTS)))
                    assert seen == total, "a read saw %r, not %d" % (seen, total)
            finally:
                conn.close()
        return body

    run_threads([transferer(t) for t in range(8)] + [checker(c) for c in range(3)])
    assert parse(setup.call("EVAL", SUM, str(len(ACCOUNTS)), *ACCOUNTS)) == total


# Read-modify-write of keys the script does not declare (0 KEYS): only atomic if the
# run holds them from its GET to its SET.
UNDECLARED_INCR = """
local k = ARGV[1]
local v = tonumber(redis.call('GET', k) or '0')
redis.call('SET', k, v + 1)
return v + 1
"""
# Writes a declared key first, then reads and writes undeclared ones.
WRITE_THEN_UNDECLARED = """
redis.call('INCR', KEYS[1])
local k = ARGV[1]
local v = tonumber(redis.call('GET', k) or '0')
redis.call('SET', k, v + 1)
return v + 1
"""


def test_undeclared_keys_race_plain_commands_atomically(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    counters = [b"undeclared:%d" % i for i in range(4)]
    per_thread = 400
    script_threads, plain_threads = 4, 4

    def scripter(tid):
        def body():
            rng = random.Random(tid)
            conn = RawConn(server.port)
            try:
                for i in range(per_thread):
                    k = counters[rng.randrange(len(counters))]
                    if i % 4 == 3:
                        r = conn.call("EVAL", WRITE_THEN_UNDECLARED, "1", b"declared:%d" % tid, k)
                    else:
                        r = conn.call("EVAL", UNDECLARED_INCR, "0", k)
                    assert isinstance(parse(r), int), r
            finally:
                conn.close()
        return body

    def plain(tid):
        def body():
            rng = random.Random(100 + tid)
            conn = RawConn(server.port)
            try:
                for _ in range(per_thread):
                    k = counters[rng.randrange(len(counters))]
                    assert isinstance(parse(conn.call("INCR", k)), int)
            finally:
                conn.close()
        return body

    run_threads([scripter(t) for t in range(script_threads)]
                + [plain(t) for t in range(plain_threads)])
    c = RawConn(server.port)
    got = sum(int(v) for v in parse(c.call("MGET", *counters)))
    assert got == per_thread * (script_threads + plain_threads), "lost updates: %d" % got
    declared = sum(int(v) for v in parse(c.call("MGET", *[b"declared:%d" % t
                                                           for t in range(script_threads)])))
    assert declared == script_threads * per_thread // 4


def test_effects_propagate_wrapped_in_multi_exec(fresh_skein):
    server = fresh_skein(extra=["--enable-debug-command", "yes"])
    c = RawConn(server.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    c.call("EVAL", "redis.call('SET','a','1'); redis.call('INCR','a')", "0")
    c.call("EVAL", "return redis.call('GET','a')", "0")
    c.call("EVAL", "redis.call('SET','b','1', 'EX', 100)", "0")
    c.call("EVAL", "redis.set_repl(redis.REPL_NONE); redis.call('SET','c','1')", "0")
    raw = parse(c.call("DEBUG", "PROPAGATION", "TAKE"))
    stream = []
    i = 0
    while i < len(raw):
        cmd, n = parse_command(raw, i)
        stream.append([x.decode().upper() if j == 0 else x.decode() for j, x in enumerate(cmd)])
        i = n
    assert stream[:5] == [["SELECT", "0"], ["MULTI"], ["SET", "a", "1"], ["INCR", "a"], ["EXEC"]]
    assert stream[5][:4] == ["SET", "b", "1", "PXAT"]
    assert len(stream) == 6


def parse_command(raw, i):
    """One RESP multibulk command of `raw` from `i`: (args, next index)."""
    end = raw.index(b"\r\n", i)
    n = int(raw[i + 1:end])
    i = end + 2
    args = []
    for _ in range(n):
        end = raw.index(b"\r\n", i)
        ln = int(raw[i + 1:end])
        args.append(raw[end + 2:end + 2 + ln])
        i = end + 2 + ln + 2
    return args, i


LOOP = "local i = 0 while true do i = i + 1 end"
WRITE_THEN_LOOP = "redis.call('SET', KEYS[1], 'x') local i = 0 while true do i = i + 1 end"


def start_script(conn, body, key):
    """Run `body` (declaring `key`) on `conn` in a thread; returns (thread, result list)."""
    result = []

    def body_fn():
        try:
            result.append(conn.call("EVAL", body, "1", key))
        finally:
            conn.close()
    t = threading.Thread(target=body_fn, daemon=True)
    t.start()
    return t, result


def busy_connection(candidates, key):
    """One of `candidates` (connections opened before the script started) that gets
    -BUSY for `key` once the script passed busy-reply-threshold: one on another worker
    (a client of the script's own worker waits for the script, as every client does in
    Redis). The others are closed. Returns (connection, the -BUSY reply)."""
    for i, c in enumerate(candidates):
        c.sock.settimeout(2)
        try:
            busy = wait_busy(c, key)
        except (TimeoutError, OSError):
            c.close()
            continue
        for other in candidates[i + 1:]:
            other.close()
        c.sock.settimeout(10)
        return c, busy
    raise AssertionError("no connection got -BUSY")


def wait_busy(conn, key, tries=2000):
    """GET `key` until it answers -BUSY (the script passed busy-reply-threshold)."""
    for _ in range(tries):
        r = conn.call("GET", key)
        if r.startswith(b"-BUSY"):
            return r
        time.sleep(0.005)
    raise AssertionError("the script never became busy")


def start_busy(fresh_skein, body, key):
    """A 2-worker server with busy-reply-threshold 50 running `body` (declaring `key`)
    until it is busy: (server, script thread, its result list, a connection of another
    worker that got -BUSY for `key`, that reply)."""
    server = fresh_skein(workers=2)
    setup = RawConn(server.port)
    assert setup.call("CONFIG", "SET", "busy-reply-threshold", "50") == b"+OK\r\n"
    assert setup.call("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    candidates = [RawConn(server.port) for _ in range(4)]
    t, result = start_script(RawConn(server.port), body, key)
    admin, busy = busy_connection(candidates + [setup], key)
    return server, t, result, admin, busy


def test_busy_script_is_killed_and_other_keys_are_served(fresh_skein):
    _, t, result, admin, busy = start_busy(fresh_skein, LOOP, "held")
    assert busy == (b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL "
                    b"or SHUTDOWN NOSAVE.\r\n")
    # Clients of other keys are served meanwhile.
    for _ in range(3):
        assert admin.call("SET", "free", "1") == b"+OK\r\n"
        assert admin.call("GET", "free") == b"$1\r\n1\r\n"
    assert admin.call("SCRIPT", "KILL") == b"+OK\r\n"
    t.join(30)
    assert not t.is_alive()
    assert result[0].startswith(b"-ERR Script killed by user with SCRIPT KILL... script: ")
    assert result[0].endswith(b", on @user_script:1.\r\n")
    assert admin.call("GET", "held") == b"$-1\r\n"
    admin.close()


def test_busy_script_that_wrote_is_unkillable_until_shutdown_nosave(fresh_skein):
    server, t, _, admin, _ = start_busy(fresh_skein, WRITE_THEN_LOOP, "w")
    assert admin.call("SCRIPT", "KILL").startswith(b"-UNKILLABLE Sorry the script already")
    assert admin.call("SHUTDOWN").startswith(b"-BUSY")
    try:
        admin.call("SHUTDOWN", "NOSAVE")
    except ConnectionError:
        pass
    assert server.proc.wait(timeout=30) == 0
    t.join(30)


LIBRARY = """#!lua name=counters
redis.register_function('bump', function(keys, args)
  return redis.call('INCRBY', keys[1], args[1])
end)
redis.register_function{function_name='peek', callback=function(keys)
  return redis.call('GET', keys[1])
end, flags={'no-writes'}}
redis.register_function('spin', function() local i = 0 while true do i = i + 1 end end)
"""


def test_functions_loaded_once_run_on_every_worker(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    loader = RawConn(server.port)
    assert loader.call("FUNCTION", "LOAD", LIBRARY) == b"$8\r\ncounters\r\n"
    conns = [RawConn(server.port) for _ in range(3 * WORKERS)]
    try:
        for i, c in enumerate(conns):
            assert parse(c.call("FCALL", "bump", "1", "n", "1")) == i + 1
            assert parse(c.call("FCALL_RO", "peek", "1", "n")) == b"%d" % (i + 1)
        # Replaced: every worker runs the new code.
        new = LIBRARY.replace("INCRBY', keys[1], args[1]", "INCRBY', keys[1], 100")
        assert loader.call("FUNCTION", "LOAD", "REPLACE", new) == b"$8\r\ncounters\r\n"
        for c in conns:
            parse(c.call("FCALL", "bump", "1", "n", "1"))
        assert parse(loader.call("GET", "n")) == b"%d" % (len(conns) + 100 * len(conns))
        r = redis.Redis(port=server.port)
        assert r.fcall("bump", 1, "n", 1) == len(conns) * 101 + 100
        assert r.fcall_ro("peek", 1, "n") == b"%d" % (len(conns) * 101 + 100)
        r.close()
    finally:
        for c in conns + [loader]:
            c.close()


def test_busy_function_is_killed_by_function_kill(fresh_skein):
    server = fresh_skein(workers=2)
    setup = RawConn(server.port)
    setup.call("CONFIG", "SET", "busy-reply-threshold", "50")
    assert setup.call("FUNCTION", "LOAD", LIBRARY) == b"$8\r\ncounters\r\n"
    candidates = [RawConn(server.port) for _ in range(4)]
    runner = RawConn(server.port)
    result = []

    def body():
        try:
            result.append(runner.call("FCALL", "spin", "1", "held"))
        finally:
            runner.close()
    t = threading.Thread(target=body, daemon=True)
    t.start()
    admin, busy = busy_connection(candidates + [setup], "held")
    assert busy == (b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL "
                    b"or SHUTDOWN NOSAVE.\r\n")
    assert admin.call("SCRIPT", "KILL") == busy
    assert admin.call("FUNCTION", "KILL") == b"+OK\r\n"
    t.join(30)
    assert result[0].startswith(b"-ERR Script killed by user with SCRIPT KILL... script: spin")
    admin.close()


def test_sigterm_waits_for_a_busy_script_then_shuts_down(fresh_skein):
    """As in Redis (whose cron does not run while a script is busy), SIGTERM during a
    busy script does not stop the server at once: clients are still served, SCRIPT KILL
    stops the script, and then the server shuts down (exit status 0)."""
    server, t, result, admin, _ = start_busy(fresh_skein, LOOP, "held")
    server.proc.send_signal(signal.SIGTERM)
    # The cron has seen the signal (several periods at hz 10) and not shut down.
    time.sleep(0.5)
    assert server.alive()
    assert admin.call("GET", "held").startswith(b"-BUSY")
    assert admin.call("SCRIPT", "KILL") == b"+OK\r\n"
    assert server.proc.wait(timeout=30) == 0
    t.join(30)
    assert result[0].startswith(b"-ERR Script killed by user with SCRIPT KILL")
