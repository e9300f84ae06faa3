"""Error replies quote the client's bytes as Redis 7.0.15 does: unchanged (0xff, a lone
0xc3, 0x80 stay themselves, never U+FFFD), cut at a NUL where Redis prints them with
`%s`, cut at 128 bytes where it prints `%.128s` (even inside a UTF-8 character), CR and
LF turned into spaces (addReplyErrorFormat, rejectCommandFormat) and trimmed from the
end of texts built with addReplyErrorFormat. Each case runs on redis-server and Skein,
in RESP2 and RESP3, and the replies must be byte-identical."""
import pytest

from resp_client import RawConn, encode

ODD = [b"\xff", b"a\xc3", b"\xc3", b"\x80x", b"ab\x00cd", b"\x00", b"a\r\nb", b"\rx\n",
       b"end\r\n", b"\xe2\x82\xac" * 50]
LONG = b"n" * 127 + b"\xc3\xa9" + b"tail"      # the 128-byte cut splits the 2-byte char
LONG_ARGS = [b"a" * 60, b"\xc3\xa9" * 40, b"z"]  # the args' 128-byte budget ends mid-char

STREAM = b"eb:s"


def cases():
    """(setup commands, commands whose replies are compared)."""
    out = []
    add = lambda *cmds, setup=(): out.append((list(setup), list(cmds)))
    # processCommand: unknown command / unknown subcommand (commandCheckExistence).
    for odd in ODD + [LONG]:
        add([odd], [odd, b"x"], [b"nosuch", odd, odd], [b"CONFIG", odd],
            [b"object", odd, b"k"], [b"Client", odd], [b"XINFO", odd],
            [b"FUNCTION", odd], [b"SCRIPT", odd], [b"XGROUP", odd], [b"MEMORY", odd])
    add([b"nosuch"] + LONG_ARGS, [b"nosuch", LONG] + LONG_ARGS, [b"nosuch", b"\x00"] + LONG_ARGS,
        [b"nosuch", b"a" * 200], [b"nosuch"] + [b"\xff"] * 100)
    for odd in ODD + [LONG]:
        # addReplySubcommandSyntaxError.
        add([b"DEBUG", odd])
        # Option errors built with addReplyErrorFormat.
        add([b"CONFIG", b"SET", odd, b"1"], [b"CONFIG", b"SET", b"maxmemory", b"0", odd, b"1"])
        add([b"CLIENT", b"LIST", b"TYPE", odd], [b"CLIENT", b"KILL", b"TYPE", odd],
            [b"CLIENT", b"KILL", b"USER", odd])
        add([b"HELLO", b"2", odd])
        add([b"EXPIRE", b"eb:k", b"10", odd], [b"PEXPIREAT", b"eb:k", b"10", b"NX", odd],
            setup=[[b"SET", b"eb:k", b"v"]])
        add([b"LATENCY", b"GRAPH", odd])
        add([b"PFDEBUG", odd, b"eb:hll"], setup=[[b"PFADD", b"eb:hll", b"a"]])
        add([b"FUNCTION", b"LOAD", odd, b"#!lua name=x\nreturn 1"])
        add([b"CLIENT", b"TRACKING", b"on", b"BCAST", b"PREFIX", b"p" + odd, b"PREFIX", b"p"],
            [b"CLIENT", b"TRACKING", b"off"])
        # Stream groups (NOGROUP) and XCLAIM options.
        grp = [[b"DEL", STREAM], [b"XADD", STREAM, b"1-1", b"f", b"v"],
               [b"XGROUP", b"CREATE", STREAM, b"g", b"0"]]
        add([b"XREADGROUP", b"GROUP", odd, b"c", b"STREAMS", STREAM, b">"],
            [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"k" + odd, b">"],
            [b"XPENDING", b"k" + odd, odd], [b"XINFO", b"CONSUMERS", STREAM, odd],
            [b"XGROUP", b"CREATECONSUMER", STREAM, odd, b"c"],
            [b"XGROUP", b"SETID", STREAM, odd, b"0"],
            [b"XCLAIM", STREAM, odd, b"c", b"0", b"1-1"],
            [b"XCLAIM", STREAM, b"g", b"c", b"0", b"1-1", odd], setup=grp)
    # Texts Redis builds with sdscatfmt and sends without mapping CR/LF: no CR or LF here.
    for odd in [o for o in ODD + [LONG] if b"\r" not in o and b"\n" not in o]:
        add([b"FUNCTION", b"LIST", odd])
        quoted = b'"' + b"".join(b"\\x%02x" % c for c in odd) + b'"'
        add([b"FUNCTION", b"LOAD", b"#!" + quoted + b" name=x\nreturn 1"],
            [b"FUNCTION", b"LOAD", b"#!lua name=x " + quoted + b"\nreturn 1"],
            [b"EVAL", b"#!" + quoted + b"\nreturn 1", b"0"],
            [b"EVAL", b"#!lua " + quoted + b"\nreturn 1", b"0"],
            [b"EVAL", b"#!lua flags=no-writes," + quoted + b"\nreturn 1", b"0"])
    # strchr(body, '\n') stops at a NUL: such a shebang line has no end.
    add([b"FUNCTION", b"LOAD", b"#!lua name=x\x00y\nreturn 1"],
        [b"EVAL", b"#!lua\x00\nreturn 1", b"0"],
        [b"EVAL", b"#!lua flags=no-writes\x00x\nreturn 1", b"0"],
        [b"EVAL", b'#!"lua\\x00"\nreturn 1', b"0"])
    return out


@pytest.mark.parametrize("proto", [2, 3])
def test_error_replies_quote_bytes_as_redis(proto, redis_server, skein_server):
    ref, sk = RawConn(redis_server.port), RawConn(skein_server.port)
    failures = []
    try:
        for c in (ref, sk):
            c.call("HELLO", str(proto))
        for setup, cmds in cases():
            for c in (ref, sk):
                for s in setup:
                    c.call(*s)
            for cmd in cmds:
                a, b = ref.call(*cmd), sk.call(*cmd)
                if a != b:
                    failures.append("%r\n  redis: %r\n  skein: %r" % (cmd, a, b))
    finally:
        ref.close()
        sk.close()
    assert not failures, "%d differ:\n%s" % (len(failures), "\n".join(failures[:30]))


def test_unknown_commands_in_multi(redis_server, skein_server):
    replies = []
    for port in (redis_server.port, skein_server.port):
        c = RawConn(port)
        out = [c.call("MULTI"), c.call(b"\xffbad", b"a\xc3"), c.call("CONFIG", b"\xc3\r\n"),
               c.call("EXEC")]
        replies.append(out)
        c.close()
    assert replies[0] == replies[1]


@pytest.mark.parametrize("got", [b"\xff", b"\xc3", b"\x80", b"+", b"\r"])
def test_protocol_error_quotes_the_byte(got, redis_server, skein_server):
    """Protocol error: expected '$', got '%c': the byte itself, then the connection ends."""
    replies = []
    for port in (redis_server.port, skein_server.port):
        c = RawConn(port)
        c.send_raw(b"*1\r\n" + got + b"3\r\nfoo\r\n")
        replies.append(c.read_reply())
        with pytest.raises((ConnectionError, OSError)):
            c.read_reply()
        c.close()
    assert replies[0] == replies[1]


@pytest.mark.parametrize("head", [b"*1\r\n\x003\r\nfoo\r\n", b"*1\r\n$\x003\r\nfoo\r\n",
                                  b"*\x001\r\n$3\r\nfoo\r\n"])
def test_nul_in_a_header_waits_like_redis(head, redis_server, skein_server):
    """Redis finds a multibulk header's CR with strchr, which stops at NUL: the request
    never completes; past 64 KiB it is a protocol error ("too big ... count string")."""
    replies = []
    for port in (redis_server.port, skein_server.port):
        c = RawConn(port, timeout=0.5)
        c.send_raw(head)
        with pytest.raises(OSError):
            c.read_reply()
        c.sock.settimeout(10)
        c.send_raw(b"x" * (70 * 1024))
        replies.append(c.read_reply())
        c.close()
    assert replies[0] == replies[1]


def test_errorstats_count_the_quoted_errors(fresh_redis, fresh_skein):
    """INFO errorstats takes the code before the first space: quoting bytes changes nothing."""
    stats = []
    for srv in (fresh_redis(), fresh_skein()):
        c = RawConn(srv.port)
        c.call("CONFIG", "RESETSTAT")
        for cmd in ([b"\xff"], [b"CONFIG", b"\xc3"], [b"XPENDING", b"k\xff", b"g"],
                    [b"DEBUG", b"\x80\r\n"], [b"CONFIG", b"SET", b"\xff", b"1"]):
            c.call(*cmd)
        bad = RawConn(srv.port)  # a protocol error counts as well
        bad.send_raw(b"*1\r\n\xff3\r\nfoo\r\n")
        bad.read_reply()
        with pytest.raises((ConnectionError, OSError)):
            bad.read_reply()
        bad.close()
        info = c.call("INFO", "errorstats").decode()
        stats.append(sorted(l for l in info.split("\r\n") if l.startswith("errorstat_")))
        c.close()
    assert stats[0] == stats[1]
