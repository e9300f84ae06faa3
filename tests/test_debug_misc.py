"""DEBUG HELP, PROTOCOL, ERROR, LOG and SET-SKIP-CHECKSUM-VALIDATION against redis-server
7.0.15, in RESP2 and RESP3."""
import os

import pytest

from difftool import run_script
from resp_client import RawConn

SCRIPT = r"""
DEBUG HELP
DEBUG help
DEBUG HELP extra
DEBUG PROTOCOL string
DEBUG PROTOCOL integer
DEBUG PROTOCOL double
DEBUG PROTOCOL bignum
DEBUG PROTOCOL null
DEBUG PROTOCOL array
DEBUG PROTOCOL SET
DEBUG PROTOCOL map
DEBUG PROTOCOL attrib
DEBUG PROTOCOL true
DEBUG PROTOCOL false
DEBUG PROTOCOL verbatim
DEBUG PROTOCOL nosuch
DEBUG PROTOCOL
DEBUG PROTOCOL string extra
@resp2 DEBUG PROTOCOL push
DEBUG ERROR "foo\r\nbar"
DEBUG ERROR ""
DEBUG ERROR "lower case text"
DEBUG ERROR "WRONGTYPE like a real one"
DEBUG ERROR "a\x00b"
DEBUG ERROR
DEBUG ERROR a b
DEBUG LOG "hello from the test"
DEBUG LOG
DEBUG NOSUCH
MULTI
DEBUG PROTOCOL map
DEBUG PROTOCOL attrib
DEBUG ERROR "in a transaction"
EXEC
"""


@pytest.mark.parametrize("proto", [2, 3])
def test_debug_misc_matches_redis(redis_server, skein_server, proto):
    failures = run_script(SCRIPT, redis_server.port, skein_server.port, proto, "misc")
    assert not failures, "\n".join(failures)


def test_protocol_push_then_a_reply(redis_server, skein_server):
    seen = []
    for srv in (redis_server, skein_server):
        c = RawConn(srv.port)
        c.call("HELLO", "3")
        push = c.call("DEBUG", "PROTOCOL", "push")
        seen.append((push, c.read_reply(), c.call("PING")))
        c.close()
    assert seen[0] == seen[1]
    assert seen[1][0].startswith(b">2\r\n")


def test_debug_log_writes_the_server_log(fresh_skein):
    srv = fresh_skein()
    c = RawConn(srv.port)
    assert c.call("DEBUG", "LOG", "marker-\x00-cut") == b"+OK\r\n"
    c.call("PING")
    c.close()
    with open(os.path.join(srv.dir, "server.log")) as f:
        log = f.read()
    assert "DEBUG LOG: marker-" in log
    assert "-cut" not in log


def test_skip_checksum_validation(fresh_redis, fresh_skein):
    seen = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("SET", "k", "some value")
        raw = c.call("DUMP", "k")
        payload = raw[raw.index(b"\r\n") + 2:-2]
        bad = payload[:-1] + bytes([payload[-1] ^ 0xFF])
        steps = [c.call("RESTORE", "k2", "0", bad)]
        steps.append(c.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"))
        steps.append(c.call("RESTORE", "k2", "0", bad))
        steps.append(c.call("GET", "k2"))
        # The version is still checked.
        newer = payload[:-10] + b"\xff\x00" + payload[-8:]
        steps.append(c.call("RESTORE", "k3", "0", newer))
        steps.append(c.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0"))
        steps.append(c.call("RESTORE", "k4", "0", bad))
        steps.append(c.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION"))
        seen.append(steps)
        c.close()
    assert seen[0] == seen[1]
    assert seen[1][2] == b"+OK\r\n"


def test_debug_error_is_not_counted(fresh_redis, fresh_skein):
    """Redis sends DEBUG ERROR's text as a raw reply: no errorstats, no failed call."""
    seen = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("CONFIG", "RESETSTAT")
        replies = [c.call("DEBUG", "ERROR", "ERR made up"), c.call("DEBUG", "ERROR", "x")]
        c.call("MULTI")
        c.call("DEBUG", "ERROR", "queued")
        replies.append(c.call("EXEC"))
        replies.append(c.call("DEBUG", "NOSUCH"))
        replies.append(c.call("INFO", "errorstats"))
        stats = c.call("INFO", "stats").decode()
        replies.append([l for l in stats.split("\r\n") if l.startswith("total_error_replies")])
        cmdstats = c.call("INFO", "commandstats").decode()
        line = [l for l in cmdstats.split("\r\n") if l.startswith("cmdstat_debug:")][0]
        replies.append([f for f in line.split(",") if "failed" in f])
        seen.append(replies)
        c.close()
    assert seen[0] == seen[1]
    assert seen[1][5] == ["total_error_replies:1"]
