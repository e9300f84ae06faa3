"""DBSIZE and INFO keyspace read each shard's published counts (engine::shard_lock) rather
than locking every shard: the answers must stay exactly Redis's, inside MULTI (the
transaction's own writes, read from the shards it holds) and after writes from several
connections spread over the workers."""
import re
import threading

from resp_client import RawConn, parse


def keyspace_line(conn, db):
    info = parse(conn.call("INFO", "keyspace")).decode()
    m = re.search(r"^db%d:keys=(\d+),expires=(\d+)" % db, info, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def transaction(conn):
    out = [conn.call("SELECT", "9"), conn.call("FLUSHDB")]
    out.append(conn.call("MULTI"))
    for cmd in (("SET", "a", "1"), ("DBSIZE",), ("SET", "b", "2", "EX", "100"), ("DBSIZE",),
                ("DEL", "a"), ("DBSIZE",), ("FLUSHDB",), ("DBSIZE",), ("SET", "c", "3"),
                ("EXEC",)):
        out.append(conn.call(*cmd))
    out.append(conn.call("DBSIZE"))
    return out


def test_dbsize_inside_multi(redis_server, skein_server):
    r, s = RawConn(redis_server.port), RawConn(skein_server.port)
    assert transaction(s) == transaction(r)


def writer(port, w, n):
    c = RawConn(port)
    c.call("SELECT", "10")
    cmds = []
    for i in range(n):
        cmds.append(("SET", "w%d:%d" % (w, i), "v"))
        if i % 3 == 0:
            cmds.append(("EXPIRE", "w%d:%d" % (w, i), "1000"))
        if i % 5 == 0:
            cmds.append(("DEL", "w%d:%d" % (w, i)))
    for at in range(0, len(cmds), 200):
        c.pipeline(cmds[at:at + 200])
    c.close()


def counts_after_writers(port, writers=4, n=3000):
    c = RawConn(port)
    c.call("SELECT", "10")
    c.call("FLUSHDB")
    threads = [threading.Thread(target=writer, args=(port, w, n)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    got = (parse(c.call("DBSIZE")), keyspace_line(c, 10))
    c.call("FLUSHDB")
    return got


def test_counts_after_concurrent_writers(redis_server, skein_server):
    expected = counts_after_writers(redis_server.port)
    assert expected == (9600, (9600, 3200))
    assert counts_after_writers(skein_server.port) == expected
