"""XREAD BLOCK and XREADGROUP BLOCK with clients on several workers, against
redis-server 7.0.15 (replies compared byte for byte, as tests/test_blocking.py does for the
list commands): `$` and `>`, IDs in the future, every waiter of a key served by one XADD
(a group's waiters one at a time), COUNT, timeouts, CLIENT UNBLOCK, a group destroyed, the
stream deleted, overwritten or flushed while waited on, MULTI/EXEC, pipelined commands
behind a blocked read; and what a served XREADGROUP propagates."""
import pytest

from resp_client import RawConn, parse
from test_blocking import assert_same_as_redis, encode, wait_blocked
from test_lists_propagation import take


def dollar_and_ids(s):
    s.block("a", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.block("b", "XREAD", "BLOCK", "0", "STREAMS", "s", "5-0")
    s.block("c", "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "0")
    s.call("p", "XADD", "s", "1-0", "f", "v")
    s.reply("a")
    s.reply("c")
    s.call("p", "XADD", "s", "2-0", "f", "w")
    s.call("p", "XADD", "s", "6-0", "f", "x")
    s.reply("b")
    s.block("a", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call("p", "XADD", "s", "7-0", "g", "y")
    s.reply("a")


def several_keys(s):
    s.call("p", "XADD", "s1", "1-0", "f", "v")
    s.block("a", "XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "$", "$")
    s.block("b", "XREAD", "BLOCK", "0", "STREAMS", "s2", "s1", "0", "1-0")
    s.call("p", "XADD", "s2", "3-0", "f", "v")
    s.reply("a")
    s.reply("b")


def group_waiters(s):
    s.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    s.block("a", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    s.block("b", "XREADGROUP", "GROUP", "g", "bob", "COUNT", "5", "BLOCK", "0", "STREAMS", "s", ">")
    s.block("c", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call("p", "XADD", "s", "1-0", "f", "v")
    s.reply("a")
    s.reply("c")
    s.call("p", "XPENDING", "s", "g")
    s.call("p", "XADD", "s", "2-0", "f", "w")
    s.reply("b")
    s.call("p", "XPENDING", "s", "g")
    s.call("p", "XINFO", "GROUPS", "s")
    s.block("a", "XREADGROUP", "GROUP", "g", "carol", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
    s.call("p", "XADD", "s", "3-0", "f", "x")
    s.reply("a")
    s.call("p", "XPENDING", "s", "g")
    s.call("p", "XINFO", "GROUPS", "s")


def group_gone(s):
    s.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    s.call("p", "XGROUP", "CREATE", "s", "h", "$")
    s.block("a", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    s.block("b", "XREADGROUP", "GROUP", "h", "bob", "BLOCK", "0", "STREAMS", "s", ">")
    s.call("p", "XGROUP", "DESTROY", "s", "g")
    s.reply("a")
    s.call("p", "XADD", "s", "1-0", "f", "v")
    s.reply("b")


def stream_deleted(s):
    s.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    s.block("a", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    s.block("b", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call("p", "DEL", "s")
    s.reply("a")
    s.call("p", "XADD", "s", "1-0", "f", "v")
    s.reply("b")
    s.call("p", "XGROUP", "CREATE", "s", "g", "$")
    s.block("a", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    s.call("p", "SET", "s", "now a string")
    s.reply("a")
    s.call("p", "DEL", "s")
    s.call("p", "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    s.block("a", "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    s.call("p", "FLUSHALL")
    s.reply("a")


def unblock_and_timeouts(s):
    ida = parse(s.conn("a").call("CLIENT", "ID"))
    idb = parse(s.conn("b").call("CLIENT", "ID"))
    s.block("a", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call("p", "XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    s.block("b", "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "t", ">")
    s.call("p", "CLIENT", "UNBLOCK", str(ida), "TIMEOUT")
    s.call("p", "CLIENT", "UNBLOCK", str(idb), "ERROR")
    s.reply("a")
    s.reply("b")
    s.call("a", "XREAD", "BLOCK", "10", "STREAMS", "s", "$")
    s.call("a", "XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "t", ">")
    s.call("a", "XINFO", "CONSUMERS", "t", "g")


def multi_exec(s):
    s.call("a", "MULTI")
    s.call("a", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call("a", "EXEC")
    s.block("a", "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    s.call("p", "MULTI")
    s.call("p", "XADD", "s", "1-0", "f", "v")
    s.call("p", "XADD", "s", "2-0", "f", "w")
    s.call("p", "EXEC")
    s.reply("a")


def pipeline_after_block(s):
    c = s.conn("a")
    c.send_raw(encode(["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]) + encode(["XLEN", "s"])
               + encode(["PING"]))
    wait_blocked(s.admin, 1)
    s.call("p", "XADD", "s", "1-0", "f", "v")
    s.reply("a")
    s.reply("a")
    s.reply("a")


def errors(s):
    s.call("a", "XREAD", "BLOCK", "-1", "STREAMS", "s", "$")
    s.call("a", "XREAD", "BLOCK", "x", "STREAMS", "s", "$")
    s.call("a", "XREAD", "BLOCK", "1.5", "STREAMS", "s", "$")
    s.call("a", "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    s.call("a", "XADD", "s", "1-0", "f", "v")
    s.call("a", "XREAD", "BLOCK", "0", "STREAMS", "s", "0")


SCENARIOS = [dollar_and_ids, several_keys, group_waiters, group_gone, stream_deleted,
             unblock_and_timeouts, multi_exec, pipeline_after_block, errors]


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_same_as_redis(scenario, proto, redis_server, skein_server):
    assert_same_as_redis(scenario, proto, redis_server, skein_server)


def test_served_xreadgroup_propagates_xclaim(fresh_skein):
    skein = fresh_skein()
    c, w = RawConn(skein.port), RawConn(skein.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    c.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    take(c)
    w.send_raw(encode(["XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"]))
    wait_blocked(c, 1)
    c.call("XADD", "s", "1-0", "f", "v")
    assert parse(w.read_reply())[0][0] == b"s"
    got = [x for x in take(c) if x[0].upper() != b"SELECT"]
    assert got[0] == [b"XADD", b"s", b"1-0", b"f", b"v"]
    assert got[1][:6] == [b"XCLAIM", b"s", b"g", b"alice", b"0", b"1-0"], got
    assert got[1][8:] == [b"RETRYCOUNT", b"1", b"FORCE", b"JUSTID", b"LASTID", b"1-0"], got
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
