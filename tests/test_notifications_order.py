"""Keyspace notifications of one command arrive contiguous, even when commands on other
workers publish at the same time. Redis runs one command at a time, so a subscriber never
sees another command's notifications between the `__keyspace@` and `__keyevent@` messages
of one change, or between the changes of one MSET; Skein's workers publish concurrently
and must keep the same guarantee.

Several connections (spread over the server's workers) send pipelined two-key MSETs while
a subscriber on PSUBSCRIBE __key*@0__:* records everything; after the writers finish, a
sentinel PUBLISH marks the end. Every MSET must show as its four messages in a row.
"""
import threading

from resp_client import RawConn, encode, parse

WRITERS = 4
BATCHES = 20
PER_BATCH = 100
SENTINEL = b"notify-order-sentinel"


def read_push(conn):
    """One RESP2 pub/sub message as a list."""
    return parse(conn.read_reply())


def writer(port, w, errors):
    try:
        c = RawConn(port)
        for b in range(BATCHES):
            cmds = []
            for i in range(PER_BATCH):
                n = b * PER_BATCH + i
                cmds.append(encode(["MSET", f"w{w}:{n}:a", "v", f"w{w}:{n}:b", "v"]))
            c.send_raw(b"".join(cmds))
            for _ in range(PER_BATCH):
                assert c.read_reply() == b"+OK\r\n"
        c.close()
    except Exception as e:  # reported by the test thread
        errors.append(e)


def test_notifications_of_one_command_are_contiguous(fresh_skein):
    s = fresh_skein(workers=2)
    admin = RawConn(s.port)
    admin.send_raw(encode(["CONFIG", "SET", "notify-keyspace-events", "KEA"]))
    assert admin.read_reply() == b"+OK\r\n"

    sub = RawConn(s.port, timeout=30)
    sub.send_raw(encode(["PSUBSCRIBE", "__key*@0__:*"]))
    assert read_push(sub)[0] == b"psubscribe"
    sub.send_raw(encode(["SUBSCRIBE", SENTINEL]))
    assert read_push(sub)[0] == b"subscribe"

    errors = []
    threads = [threading.Thread(target=writer, args=(s.port, w, errors)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    admin.send_raw(encode(["PUBLISH", SENTINEL, "end"]))

    got = []
    while True:
        m = read_push(sub)
        if m[0] == b"message" and m[1] == SENTINEL:
            break
        assert m[0] == b"pmessage", m
        got.append((m[2], m[3]))
    assert len(got) == WRITERS * BATCHES * PER_BATCH * 4

    for i in range(0, len(got), 4):
        (c1, e1), (c2, k1), (c3, e2), (c4, k2) = got[i:i + 4]
        assert c1.startswith(b"__keyspace@0__:") and c1.endswith(b":a") and e1 == b"set", got[i:i + 4]
        key_a = c1[len(b"__keyspace@0__:"):]
        key_b = key_a[:-1] + b"b"
        assert (c2, k1) == (b"__keyevent@0__:set", key_a), got[i:i + 4]
        assert (c3, e2) == (b"__keyspace@0__:" + key_b, b"set"), got[i:i + 4]
        assert (c4, k2) == (b"__keyevent@0__:set", key_b), got[i:i + 4]
    sub.close()
    admin.close()
