"""Concurrency: hundreds of clients on a skein-server with 4 workers, hitting shared keys.

* Shared counters: every INCR reply on one counter is unique (the replies are exactly
  1..N), and counters moved by INCRBY/DECRBY end at the exact sum of what was sent.
* Multi-key atomicity across shards: groups of keys (spread over shards) are written
  only by MSET of the whole group with one value, and deleted only by DEL of the whole
  group; MGET of a group must never see a mix of values (or some keys missing).
* Every client also pipelines, so one worker runs many commands per read.

The load is bounded (a fixed number of operations per client), not timed.
"""
import asyncio
import random

from resp_client import RawConn, encode

CLIENTS = 200
OPS_PER_CLIENT = 150
WORKERS = 4
UNIQUE_COUNTER = b"ctr:unique"
SUM_COUNTERS = [b"ctr:sum:%d" % i for i in range(4)]
GROUPS = [[b"grp:%d:%s" % (g, name) for name in (b"a", b"b", b"c", b"d", b"e", b"f")]
          for g in range(4)]
DEADLINE_S = 120


async def read_reply(reader):
    """One reply, decoded: bytes, int, None, list, or ('err', text)."""
    line = await reader.readline()
    if not line:
        raise ConnectionError("connection closed")
    t, body = line[:1], line[1:-2]
    if t == b"+":
        return body
    if t == b"-":
        return ("err", body.decode())
    if t == b":":
        return int(body)
    if t == b"$":
        n = int(body)
        if n < 0:
            return None
        data = await reader.readexactly(n + 2)
        return data[:-2]
    if t == b"*":
        n = int(body)
        if n < 0:
            return None
        return [await read_reply(reader) for _ in range(n)]
    raise ValueError("unexpected reply %r" % line)


class Client:
    def __init__(self, cid, reader, writer):
        self.cid = cid
        self.reader, self.writer = reader, writer
        self.rng = random.Random(cid)
        self.unique_replies = []
        self.sums = [0] * len(SUM_COUNTERS)
        self.mixed = []

    async def pipeline(self, commands):
        self.writer.write(b"".join(encode(c) for c in commands))
        await self.writer.drain()
        return [await read_reply(self.reader) for _ in commands]

    def one_op(self, seq):
        """A command and a check of its reply."""
        r = self.rng
        kind = r.randrange(5)
        if kind == 0:
            return [b"INCR", UNIQUE_COUNTER], self.unique_replies.append
        if kind == 1:
            i = r.randrange(len(SUM_COUNTERS))
            by = r.randint(-1000, 1000)
            self.sums[i] += by
            name = b"INCRBY" if by >= 0 or r.random() < 0.5 else b"DECRBY"
            arg = by if name == b"INCRBY" else -by
            return [name, SUM_COUNTERS[i], arg], self.expect_int
        group = r.choice(GROUPS)
        if kind == 2:
            value = b"c%d-%d" % (self.cid, seq)
            return [b"MSET"] + [x for k in group for x in (k, value)], self.expect_ok
        if kind == 3 and r.random() < 0.2:
            return [b"DEL"] + group, self.expect_int
        return [b"MGET"] + group, self.check_group

    def expect_ok(self, reply):
        assert reply == b"OK", reply

    def expect_int(self, reply):
        assert isinstance(reply, int), reply

    def check_group(self, reply):
        assert isinstance(reply, list) and len(reply) == len(GROUPS[0]), reply
        if len(set(reply)) != 1:
            self.mixed.append(reply)

    async def run(self):
        seq = 0
        while seq < OPS_PER_CLIENT:
            batch = self.rng.choice([1, 1, 1, 5, 10])
            ops = [self.one_op(seq + i) for i in range(min(batch, OPS_PER_CLIENT - seq))]
            seq += len(ops)
            replies = await self.pipeline([cmd for cmd, _ in ops])
            for (_, check), reply in zip(ops, replies):
                check(reply)
        self.writer.close()
        await self.writer.wait_closed()


async def run_clients(port):
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CLIENTS)]
    clients = [Client(i, r, w) for i, (r, w) in enumerate(conns)]
    await asyncio.wait_for(asyncio.gather(*(c.run() for c in clients)), DEADLINE_S)
    return clients


def test_shared_counters_and_atomic_groups(fresh_skein):
    server = fresh_skein(workers=WORKERS)
    setup = RawConn(server.port)
    try:
        for group in GROUPS:
            setup.call("MSET", *[x for k in group for x in (k, b"init")])
        clients = asyncio.run(run_clients(server.port))

        mixed = [m for c in clients for m in c.mixed]
        assert not mixed, "MGET saw a group half-written: %r" % mixed[:5]

        unique = sorted(v for c in clients for v in c.unique_replies)
        assert unique == list(range(1, len(unique) + 1)), "INCR replies repeated or skipped"
        assert setup.call("GET", UNIQUE_COUNTER) == b"$%d\r\n%d\r\n" % (
            len(str(len(unique))), len(unique))

        for i, key in enumerate(SUM_COUNTERS):
            want = sum(c.sums[i] for c in clients)
            assert setup.call("GET", key) == b"$%d\r\n%d\r\n" % (len(str(want)), want), key

        # Every client finished and left; the server is still up and answering.
        assert setup.call("PING") == b"+PONG\r\n"
        assert server.alive()
    finally:
        setup.close()
