"""Inline (telnet-style) requests: word splitting as Redis's sdssplitargs does it,
compared with redis-server byte for byte."""
import pytest

from resp_client import RawConn

CASES = [
    b"SET\x0binline:k v\r\nGET\x0binline:k\r\n",      # \v inside a word does not split it
    b"\x0c\x0bSET inline:a 1\r\nGET inline:a\r\n",    # ...but is skipped before a word
    b"SET inline:b a\x0cb\r\nSTRLEN inline:b\r\n",
    b"ECHO a\tb\r\nECHO 'x y'\r\n",
    b"\r\n\r\nPING\n",                                # empty lines are skipped
]


@pytest.mark.parametrize("payload", CASES)
def test_inline_splitting_matches_redis(payload, redis_server, skein_server):
    replies = []
    for port in (redis_server.port, skein_server.port):
        c = RawConn(port)
        c.call("DEL", "inline:k", "inline:a", "inline:b", "SET\x0binline:k")
        c.send_raw(payload)
        n = payload.count(b"\n") - payload.count(b"\r\n\r\n") * 2
        out = []
        try:
            for _ in range(n):
                out.append(c.read_reply())
        except (ConnectionError, OSError) as e:
            out.append(repr(e).encode())
        c.close()
        replies.append(out)
    assert replies[0] == replies[1]


def test_nul_before_newline_waits_like_redis(redis_server, skein_server):
    """Redis finds an inline request's end with strchr, which stops at NUL: such a request
    never completes; past 64 KiB it is a protocol error. Skein does the same."""
    for port in (redis_server.port, skein_server.port):
        c = RawConn(port, timeout=0.5)
        c.send_raw(b"PING\x00x\r\n")
        with pytest.raises(OSError):
            c.read_reply()
        c.sock.settimeout(10)
        c.send_raw(b"x" * (70 * 1024))
        assert c.read_reply() == b"-ERR Protocol error: too big inline request\r\n"
        c.close()
