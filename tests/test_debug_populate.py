"""DEBUG POPULATE against redis-server 7.0.15, in RESP2 and RESP3: key names and values
(default, prefixed, padded and cut to a size, long and NUL-holding prefixes), keys that
exist (or expired) left alone or replaced, WATCH, MULTI, the errors, and that it counts
no change to save."""
import pytest

from difftool import run_script
from resp_client import RawConn

SCRIPT = r"""
DEBUG POPULATE 10
DBSIZE
@sort KEYS *
MGET key:0 key:1 key:9 key:10
OBJECT ENCODING key:3
DEBUG POPULATE 5 foo
@sort KEYS foo*
GET foo:4
DEBUG POPULATE 4 bar 3
GET bar:0
GET bar:3
STRLEN bar:2
OBJECT ENCODING bar:1
DEBUG POPULATE 3 pad 12
GET pad:0
GET pad:2
DEBUG POPULATE 2 big 100
GET big:1
OBJECT ENCODING big:1
DEBUG POPULATE 2 sz0 0
GET sz0:1
DEBUG POPULATE 3 ""
@sort KEYS :*
DEBUG POPULATE 2 "a\x00b"
@sort KEYS a*
DEBUG POPULATE 2 pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp
@sort KEYS ppp*
DEBUG POPULATE 0
DEBUG POPULATE 0 x 5
SET key:20 mine
DEBUG POPULATE 22
GET key:20
GET key:21
SET ex:1 short PX 1
@sleep 20
DEBUG POPULATE 2 ex
GET ex:1
TTL ex:1
LPUSH other:0 x
DEBUG POPULATE 1 other
TYPE other:0
DEBUG POPULATE -1
DEBUG POPULATE abc
DEBUG POPULATE 1.5
DEBUG POPULATE " 1"
DEBUG POPULATE 5 y -1
DEBUG POPULATE 5 y abc
DEBUG POPULATE -1 y abc
DEBUG POPULATE 5 y 1 extra
DEBUG POPULATE
DEBUG populate 2 MiXeD
@sort KEYS MiXeD*
DBSIZE
WATCH key:30
DEBUG POPULATE 31
MULTI
PING
EXEC
WATCH key:40
DEBUG POPULATE 40
MULTI
PING
EXEC
MULTI
DEBUG POPULATE 3 tx
DEBUG POPULATE -3 tx
GET tx:2
EXEC
SELECT 3
DEBUG POPULATE 3 db3
DBSIZE
SELECT 0
DBSIZE
"""


@pytest.mark.parametrize("proto", [2, 3])
def test_populate_matches_redis(redis_server, skein_server, proto):
    failures = run_script(SCRIPT, redis_server.port, skein_server.port, proto, "populate")
    assert not failures, "\n".join(failures)


def info_field(conn, section, name):
    text = conn.call("INFO", section).decode()
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise KeyError(name)


def test_populate_is_not_a_change_to_save(fresh_redis, fresh_skein):
    seen = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("SET", "key:2", "x")
        before = int(info_field(c, "persistence", "rdb_changes_since_last_save"))
        assert c.call("DEBUG", "POPULATE", "5000") == b"+OK\r\n"
        after = int(info_field(c, "persistence", "rdb_changes_since_last_save"))
        seen.append((after - before, c.call("DBSIZE"), c.call("GET", "key:2"),
                     c.call("GET", "key:4999")))
        c.close()
    assert seen[0] == seen[1]
    assert seen[1][0] == 0


def test_big_populate_leaves_other_clients_served(fresh_skein):
    """A big count runs a batch of keys at a time: a client on another connection is
    served while it runs, and the count comes out whole."""
    import threading

    srv = fresh_skein()
    c = RawConn(srv.port)
    done = []

    def run():
        conn = RawConn(srv.port, timeout=120)
        done.append(conn.call("DEBUG", "POPULATE", "200000"))
        conn.close()

    t = threading.Thread(target=run)
    t.start()
    served = 0
    while t.is_alive() and served < 50:
        assert c.call("SET", "side", str(served)) == b"+OK\r\n"
        served += 1
    t.join()
    assert done == [b"+OK\r\n"]
    assert c.call("DBSIZE") == b":200001\r\n"
    c.close()


def test_populate_during_a_busy_script(fresh_redis, fresh_skein):
    """A script past busy-reply-threshold holding the shard of a key to write: -BUSY, as
    Redis answers (Skein answers so only when the script holds a shard POPULATE needs;
    the asking connection is one of another worker, as in test_scripting)."""
    from test_scripting import LOOP, busy_connection, start_script

    seen = []
    for srv in (fresh_redis(), fresh_skein(workers=2)):
        setup = RawConn(srv.port)
        setup.call("CONFIG", "SET", "busy-reply-threshold", "50")
        candidates = [RawConn(srv.port) for _ in range(4)]
        t, result = start_script(RawConn(srv.port), LOOP, "key:3")
        admin, _ = busy_connection(candidates + [setup], "key:3")
        steps = [admin.call("DEBUG", "POPULATE", "10"), admin.call("SCRIPT", "KILL")]
        t.join(10)
        steps += [result[0][:1], admin.call("DBSIZE")]
        seen.append(steps)
        admin.close()
    assert seen[0] == seen[1]
    assert seen[1][0].startswith(b"-BUSY")
