"""Transactions under concurrency, on a skein-server with 4 workers (or, with
SKEIN_TEST_AGAINST_REDIS=1, on redis-server: the invariants are Redis's).

* Transfers: accounts spread over many keys (so over shards); client threads move money
  with MULTI / DECRBY a / INCRBY b / EXEC while checker threads read every account in one
  transaction (MULTI + MGET, MULTI + one GET per account), and with a plain MGET; the
  total must never change, and at the end each account holds exactly its start plus
  the transfers that touched it.
* Optimistic increments: client threads each need a fixed number of successful
  WATCH k / GET k / MULTI / SET k v+1 / INCR commits / EXEC rounds, retrying when EXEC
  returns null; the final value equals the number of successful EXECs, which equals
  the target, and the commit counter written in the same transactions agrees.

Everything is bounded by counts (and a deadline that only guards against a hang); no
assertion depends on timing. The server is stopped by PID by the fixture.
"""
import random
import threading
import time

from resp_client import RawConn, parse

WORKERS = 4
DEADLINE_S = 120

ACCOUNTS = [b"acct:{%d}:%d" % (i % 7, i) for i in range(48)]
START_BALANCE = 1000
TRANSFER_THREADS = 8
TRANSFERS_PER_THREAD = 400
CHECKER_THREADS = 3
MAX_CHECKS = 3000


def run_threads(targets):
    """Start every target together; re-raise the first failure in the caller."""
    errors = []
    start = threading.Barrier(len(targets))

    def wrap(fn):
        def body():
            try:
                start.wait(timeout=30)
                fn()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        return body

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    deadline = time.time() + DEADLINE_S
    for t in threads:
        t.join(max(0.0, deadline - time.time()))
    assert not any(t.is_alive() for t in threads), "threads still running after %ds" % DEADLINE_S
    if errors:
        raise errors[0]


def test_transfers_keep_the_total(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    setup = RawConn(server.port)
    setup.call("FLUSHALL")
    assert setup.call("MSET", *[x for k in ACCOUNTS for x in (k, START_BALANCE)]) == b"+OK\r\n"
    total = START_BALANCE * len(ACCOUNTS)

    deltas = [dict() for _ in range(TRANSFER_THREADS)]
    done = threading.Event()
    remaining = [TRANSFER_THREADS]
    lock = threading.Lock()
    checks = []

    def transferer(tid):
        def body():
            rng = random.Random(tid)
            conn = RawConn(server.port)
            mine = deltas[tid]
            try:
                sent = 0
                while sent < TRANSFERS_PER_THREAD:
                    # Up to 4 transactions in one write, so several are queued at once.
                    batch = min(rng.choice([1, 1, 2, 4]), TRANSFERS_PER_THREAD - sent)
                    cmds, moves = [], []
                    for _ in range(batch):
                        a, b = rng.sample(ACCOUNTS, 2)
                        amount = rng.randint(1, 50)
                        cmds += [("MULTI",), ("DECRBY", a, amount), ("INCRBY", b, amount),
                                 ("EXEC",)]
                        moves.append((a, b, amount))
                    if batch == 1 and rng.random() < 0.5:
                        # One command per round trip: the queue builds up across reads.
                        replies = [conn.call(*c) for c in cmds]
                    else:
                        replies = conn.pipeline(cmds)
                    for j, (a, b, amount) in enumerate(moves):
                        r = replies[4 * j:4 * j + 4]
                        assert r[:3] == [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n"], r
                        out = parse(r[3])
                        assert isinstance(out, list) and len(out) == 2, r[3]
                        assert all(isinstance(x, int) for x in out), r[3]
                        mine[a] = mine.get(a, 0) - amount
                        mine[b] = mine.get(b, 0) + amount
                    sent += batch
            finally:
                conn.close()
                with lock:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        done.set()
        return body

    def checker(cid):
        def body():
            conn = RawConn(server.port)
            try:
                for n in range(MAX_CHECKS):
                    if done.is_set():
                        break
                    mode = (n + cid) % 3
                    if mode == 0:
                        replies = conn.pipeline([("MULTI",), ("MGET",) + tuple(ACCOUNTS),
                                                 ("EXEC",)])
                        values = parse(replies[2])[0]
                    elif mode == 1:
                        replies = conn.pipeline([("MULTI",)] + [("GET", k) for k in ACCOUNTS]
                                                + [("EXEC",)])
                        values = parse(replies[-1])
                    else:
                        values = parse(conn.call("MGET", *ACCOUNTS))
                    assert isinstance(values, list) and len(values) == len(ACCOUNTS), values
                    seen = sum(int(v) for v in values)
                    checks.append(mode)
                    assert seen == total, "a read saw total %d, not %d (mode %d)" % (
                        seen, total, mode)
            finally:
                conn.close()
        return body

    try:
        run_threads([transferer(t) for t in range(TRANSFER_THREADS)]
                    + [checker(c) for c in range(CHECKER_THREADS)])
        final = [int(v) for v in parse(setup.call("MGET", *ACCOUNTS))]
        assert sum(final) == total
        for key, value in zip(ACCOUNTS, final):
            want = START_BALANCE + sum(d.get(key, 0) for d in deltas)
            assert value == want, (key, value, want)
        assert checks, "no checker read ran"
        assert setup.call("PING") == b"+PONG\r\n"
        assert server.alive()
    finally:
        setup.close()


OPTIMISTIC_CLIENTS = 16
INCREMENTS_PER_CLIENT = 25
MAX_ATTEMPTS_PER_CLIENT = 20000
COUNTER = b"opt:{c}:value"
COMMITS = b"opt:{c}:commits"
# A second, independent counter on another key (likely another shard), watched together
# with the first by half of the clients.
OTHER = b"opt:{o}:value"


def test_watch_optimistic_increments(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    setup = RawConn(server.port)
    setup.call("FLUSHALL")
    setup.call("MSET", COUNTER, 0, COMMITS, 0, OTHER, 0)
    successes = [0] * OPTIMISTIC_CLIENTS
    failures = [0] * OPTIMISTIC_CLIENTS
    other_successes = [0] * OPTIMISTIC_CLIENTS

    def client(cid):
        def body():
            conn = RawConn(server.port)
            both = cid % 2 == 1
            try:
                attempts = 0
                while successes[cid] < INCREMENTS_PER_CLIENT:
                    attempts += 1
                    assert attempts <= MAX_ATTEMPTS_PER_CLIENT, "no progress for client %d" % cid
                    keys = (COUNTER, OTHER) if both else (COUNTER,)
                    assert conn.call("WATCH", *keys) == b"+OK\r\n"
                    values = [int(parse(conn.call("GET", k))) for k in keys]
                    cmds = [("MULTI",), ("SET", COUNTER, values[0] + 1), ("INCR", COMMITS)]
                    if both:
                        cmds.append(("SET", OTHER, values[1] + 1))
                    cmds.append(("EXEC",))
                    replies = conn.pipeline(cmds)
                    assert replies[0] == b"+OK\r\n"
                    assert all(r == b"+QUEUED\r\n" for r in replies[1:-1]), replies
                    out = parse(replies[-1])
                    if out is None:
                        failures[cid] += 1
                        continue
                    assert out[0] == b"OK" and isinstance(out[1], int), out
                    successes[cid] += 1
                    if both:
                        assert out[2] == b"OK", out
                        other_successes[cid] += 1
            finally:
                conn.close()
        return body

    try:
        run_threads([client(c) for c in range(OPTIMISTIC_CLIENTS)])
        target = OPTIMISTIC_CLIENTS * INCREMENTS_PER_CLIENT
        assert sum(successes) == target
        value, commits, other = (int(v) for v in parse(setup.call("MGET", COUNTER, COMMITS, OTHER)))
        assert value == sum(successes) == target, (value, sum(successes))
        assert commits == target, commits
        assert other == sum(other_successes), (other, sum(other_successes))
        assert setup.call("PING") == b"+PONG\r\n"
        assert server.alive()
    finally:
        setup.close()
