"""DEBUG OBJECT on every type (streams with a group included) and encoding against redis-server 7.0.15: the same encoding,
serialized length and (for lists) quicklist figures; the address and LRU fields, which
differ by nature, are left out of the comparison."""
import re

from resp_client import RawConn


def fields(reply):
    text = reply.decode()
    return re.sub(r"Value at:\S+ |lru:\d+ lru_seconds_idle:\d+", "", text)


SETUP = [
    ["CONFIG", "SET", "list-compress-depth", "0"],
    ["RPUSH", "l1"] + [str(i) for i in range(1000)],
    ["CONFIG", "SET", "list-compress-depth", "1"],
    ["RPUSH", "l2"] + ["element-%d" % i for i in range(3000)],
    ["CONFIG", "SET", "list-max-listpack-size", "5"],
    ["RPUSH", "l3"] + [str(i) for i in range(23)],
    ["CONFIG", "SET", "list-compress-depth", "0"],
    ["CONFIG", "SET", "list-max-listpack-size", "-2"],
    ["HSET", "h", "a", "1", "b", "2"],
    ["SADD", "s", "1", "2", "3"],
    ["SADD", "s2", "a", "b"],
    ["ZADD", "z", "1", "a", "2.5", "b"],
    ["SET", "str", "12345"],
    ["XADD", "x", "1-1", "field", "value", "n", "12"],
    ["XADD", "x", "2-0", "field", "other", "n", "13"],
    ["XGROUP", "CREATE", "x", "g", "0"],
    ["XGROUP", "CREATECONSUMER", "x", "g", "c"],
]


def test_debug_object_matches_redis(fresh_redis, fresh_skein):
    replies = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        for cmd in SETUP:
            c.call(*cmd)
        replies.append([fields(c.call("DEBUG", "OBJECT", k))
                        for k in ["l1", "l2", "l3", "h", "s", "s2", "z", "str", "x"]])
        c.close()
    assert replies[0] == replies[1]
    assert "ql_nodes:5 ql_avg_node:4.60 ql_listpack_max:5" in replies[1][2]
