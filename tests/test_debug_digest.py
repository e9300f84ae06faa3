"""DEBUG DIGEST and DEBUG DIGEST-VALUE against redis-server 7.0.15, in RESP2 and RESP3:
every type in each of its encodings (strings int/embstr/raw, lists listpack/quicklist,
sets intset/hashtable, sorted sets listpack/skiplist with -0, inf and fractional scores,
hashes listpack/hashtable, streams with deletions, trims and groups), TTLs, keys past
their TTL not yet deleted, several databases, MULTI, and the errors."""
import random

import pytest

from difftool import run_script
from resp_client import RawConn

SCRIPT = r"""
DEBUG DIGEST
DEBUG DIGEST-VALUE
DEBUG DIGEST-VALUE nokey
SET s1 hello
DEBUG DIGEST
DEBUG DIGEST-VALUE s1 nokey s1
SET s2 12345
SET s3 -7
SET s4 "0123"
SET s5 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
SET s6 ""
APPEND s7 "abc\x00def"
DEBUG DIGEST-VALUE s2 s3 s4 s5 s6 s7
RPUSH l1 a b 3 -4 "" c
RPUSH l2 b a 3 -4 "" c
DEBUG DIGEST-VALUE l1 l2
SADD set1 1 2 3 -10 99999999999
SADD set2 a b c 1 2
SADD set3 c b a 2 1
DEBUG DIGEST-VALUE set1 set2 set3
ZADD z1 1 a 2.5 b -0 c inf d -inf e 0.1 f 3 10 1e300 g 1.5e-7 h
ZADD z2 1 a 2 b
ZADD z3 2 b 1 a
DEBUG DIGEST-VALUE z1 z2 z3
HSET h1 f1 v1 f2 2 3 v3 "" empty
HSET h2 a 1 b 2
HSET h3 b 2 a 1
DEBUG DIGEST-VALUE h1 h2 h3
XADD x1 1-1 f v n 12
XADD x1 1-2 f w n 13
XADD x1 5-0 other 1 fields 2 here 3
XADD x1 6-0 f "" n -1
DEBUG DIGEST-VALUE x1
XDEL x1 1-2
DEBUG DIGEST-VALUE x1
XGROUP CREATE x1 g 0
XREADGROUP GROUP g c COUNT 1 STREAMS x1 >
DEBUG DIGEST-VALUE x1
XADD x2 MAXLEN 0 7-1 a b
DEBUG DIGEST-VALUE x2
XGROUP CREATE x3 g $ MKSTREAM
DEBUG DIGEST-VALUE x3
DEBUG DIGEST
EXPIRE s1 1000
DEBUG DIGEST-VALUE s1
DEBUG DIGEST
PERSIST s1
DEBUG DIGEST
SELECT 1
SET s1 hello
RPUSH l1 a b 3 -4 "" c
DEBUG DIGEST-VALUE s1 l1
SELECT 0
DEBUG DIGEST
SELECT 9
SET other value
SELECT 0
DEBUG DIGEST
SWAPDB 1 2
DEBUG DIGEST
MULTI
DEBUG DIGEST
DEBUG DIGEST-VALUE l1 z1
SET s1 changed
DEBUG DIGEST
EXEC
DEBUG DIGEST x
DEBUG digest
DEBUG Digest-Value s1
DEBUG SET-ACTIVE-EXPIRE 0
SET gone soon PX 1
HSET hgone a 1
PEXPIRE hgone 1
@sleep 30
DEBUG DIGEST-VALUE gone hgone
DEBUG DIGEST
DEBUG SET-ACTIVE-EXPIRE 1
FLUSHALL
DEBUG DIGEST
"""

# Past the listpack/intset limits: quicklist, hashtable, skiplist, big streams.
BIG = r"""
CONFIG SET list-max-listpack-size 4
RPUSH bl 1 2 3 4 5 6 7 8 9 10 11 a b c d e f g h i j
CONFIG SET list-max-listpack-size -2
DEBUG DIGEST-VALUE bl
CONFIG SET set-max-intset-entries 3
SADD bs 1 2 3 4 5
SADD bs2 5 4 3 2 1
CONFIG SET set-max-intset-entries 512
DEBUG DIGEST-VALUE bs bs2
CONFIG SET zset-max-listpack-entries 2
ZADD bz 1 a 2 b -0 c 3.25 d inf e 7 12
ZADD bz2 -0 zero
CONFIG SET zset-max-listpack-entries 128
ZADD lz -0 zero
DEBUG DIGEST-VALUE bz bz2 lz
CONFIG SET hash-max-listpack-entries 2
HSET bh a 1 b 2 c 3 4 four
CONFIG SET hash-max-listpack-entries 512
DEBUG DIGEST-VALUE bh
CONFIG SET stream-node-max-entries 3
XADD bx 1-0 a 1
XADD bx 2-0 a 2
XADD bx 3-0 b 3
XADD bx 4-0 a 4 b 5
XADD bx 5-0 a 6
XDEL bx 3-0
XTRIM bx MINID 2
CONFIG SET stream-node-max-entries 100
DEBUG DIGEST-VALUE bx
DEBUG DIGEST
"""


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name,text", [("types", SCRIPT), ("big", BIG)], ids=["types", "big"])
def test_digest_matches_redis(redis_server, skein_server, proto, name, text):
    failures = run_script(text, redis_server.port, skein_server.port, proto, name)
    assert not failures, "\n".join(failures)


def random_commands(rng, n):
    cmds = []
    for i in range(n):
        k = "k%d" % rng.randrange(400)
        kind = rng.randrange(7)
        word = lambda: rng.choice(["a", "b", "", "17", "-3", "x" * rng.randrange(60), "1e3"])
        if kind == 0:
            cmds.append(["SET", k + "s", word()])
        elif kind == 1:
            cmds.append(["RPUSH", k + "l"] + [word() for _ in range(rng.randrange(1, 40))])
        elif kind == 2:
            cmds.append(["SADD", k + "t"] + [word() for _ in range(rng.randrange(1, 30))])
        elif kind == 3:
            args = []
            for _ in range(rng.randrange(1, 30)):
                args += [rng.choice(["1", "-0", "0.5", "inf", "-2.75", str(rng.random())]), word()]
            cmds.append(["ZADD", k + "z"] + args)
        elif kind == 4:
            args = []
            for _ in range(rng.randrange(1, 30)):
                args += [word() + str(rng.randrange(200)), word()]
            cmds.append(["HSET", k + "h"] + args)
        elif kind == 5:
            cmds.append(["XADD", k + "x", "%d-1" % (i + 1)] + [word() or "f", word()] * rng.randrange(1, 4))
        else:
            cmds.append(["PEXPIRE", k + rng.choice("sltzhx"), "100000"])
    return cmds


def test_digest_of_a_random_dataset(fresh_redis, fresh_skein):
    rng = random.Random(7)
    cmds = [["DEBUG", "POPULATE", "3000", "pop", "20"]] + random_commands(rng, 3000)
    cmds += [["SELECT", "4"]] + random_commands(rng, 300) + [["SELECT", "0"]]
    results = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        for i in range(0, len(cmds), 200):
            c.pipeline(cmds[i:i + 200])
        keys = sorted(set(cmd[1] for cmd in cmds[1:] if cmd[0] != "SELECT"))
        results.append((c.call("DEBUG", "DIGEST"), c.call("DEBUG", "DIGEST-VALUE", *keys)))
        c.close()
    assert results[0] == results[1]
    assert results[1][0] != b"+" + b"0" * 40 + b"\r\n"
