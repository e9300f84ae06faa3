"""Hostile and unusual input over real sockets. Each test ends by checking that the
server still serves other clients. Where Redis's behaviour is the reference, the same
check runs against redis-server 7.0.15 too."""
import resource
import socket
import time

import pytest

from resp_client import RawConn, encode


def connect(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def read_until_closed(s, limit=1 << 20):
    """Everything the server sends until it closes the connection."""
    out = b""
    while len(out) < limit:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def assert_serving(port):
    c = RawConn(port)
    assert c.call("PING") == b"+PONG\r\n"
    c.close()


def start(kind, fresh_redis, fresh_skein, extra=()):
    """A server of its own: redis-server or skein-server, with `extra` options."""
    return (fresh_redis if kind == "redis" else fresh_skein)(list(extra))


def expect_closed(s, expected, port):
    """The server sends `expected`, closes `s`, and still serves others."""
    assert read_until_closed(s) == expected
    s.close()
    assert_serving(port)


def both(redis_server, skein_server):
    return [("redis", redis_server.port), ("skein", skein_server.port)]


PROTOCOL_ERRORS = [
    (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*3000000000\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\nfoo\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*" + b"1" * 70000, b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b"*1\r\n$" + b"1" * 70000, b"-ERR Protocol error: too big bulk count string\r\n"),
    (b"x" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
    (b'SET "a\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
]


@pytest.mark.parametrize("data,expected", PROTOCOL_ERRORS,
                         ids=[e[1][22:-2].decode() + "-%d" % i
                              for i, e in enumerate(PROTOCOL_ERRORS)])
def test_protocol_errors(data, expected, redis_server, skein_server):
    for name, port in both(redis_server, skein_server):
        s = connect(port)
        # A valid command first: its reply comes before the error.
        s.sendall(encode(["PING"]) + data)
        got = read_until_closed(s)
        s.close()
        assert got == b"+PONG\r\n" + expected, name
        assert_serving(port)


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_proto_max_bulk_len_lowered(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein, ["--proto-max-bulk-len", "1mb"])
    c = RawConn(srv.port)
    big = b"x" * (1 << 20)
    assert c.call("SET", "k", big) == b"+OK\r\n"
    c.close()
    s = connect(srv.port)
    s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % ((1 << 20) + 1))
    expect_closed(s, b"-ERR Protocol error: invalid bulk length\r\n", srv.port)


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_query_buffer_limit(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein, ["--client-query-buffer-limit", "1mb"])
    s = connect(srv.port)
    # A 5 MB argument announced; the server drops us once 1 MB is buffered.
    s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5000000\r\n")
    try:
        for _ in range(40):
            s.sendall(b"y" * 65536)
    except (BrokenPipeError, ConnectionResetError):
        pass
    expect_closed(s, b"", srv.port)


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_output_buffer_hard_limit(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein, ["--client-output-buffer-limit", "normal 1mb 1mb 0"])
    c = RawConn(srv.port)
    c.call("SET", "big", b"v" * 100000)
    c.close()
    s = connect(srv.port)
    # 50 MB of replies asked for, nothing read: the server must cut us off.
    s.sendall(encode(["GET", "big"]) * 500)
    time.sleep(1.0)
    got = read_until_closed(s, limit=1 << 30)
    s.close()
    assert len(got) < 500 * 100000
    assert_serving(srv.port)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_slow_reader_memory_bounded(fresh_skein):
    srv = fresh_skein()
    c = RawConn(srv.port)
    value = b"v" * (1 << 20)
    c.call("SET", "big", value)
    before = rss_kb(srv.pid)
    s = connect(srv.port, timeout=30)
    n = 400  # 400 MB of replies if the server buffered them all
    s.sendall(encode(["GET", "big"]) * n)
    time.sleep(1.5)
    grown_mb = (rss_kb(srv.pid) - before) / 1024
    # Skein stops reading this client past 64 MiB of pending output.
    assert grown_mb < 200, grown_mb
    # Other clients are served meanwhile.
    assert c.call("PING") == b"+PONG\r\n"
    # And every reply arrives, in full, once the client reads.
    expected = n * (len(b"$1048576\r\n") + len(value) + 2)
    got = 0
    while got < expected:
        chunk = s.recv(1 << 20)
        assert chunk
        got += len(chunk)
    assert got == expected
    s.close()
    c.close()
    assert_serving(srv.port)


def test_half_closed_socket_gets_all_replies(redis_server, skein_server):
    for name, port in both(redis_server, skein_server):
        s = connect(port)
        cmds = [["SET", "hc:%d" % i, i] for i in range(200)] + [["GET", "hc:199"]]
        s.sendall(b"".join(encode(c) for c in cmds))
        s.shutdown(socket.SHUT_WR)
        got = read_until_closed(s)
        s.close()
        assert got == b"+OK\r\n" * 200 + b"$3\r\n199\r\n", name
        assert_serving(port)


def client_count(conn):
    """Clients connected, asked over one long-lived connection (a fresh connection per
    call would race with the server noticing the previous one's close)."""
    reply = conn.call("CLIENT", "LIST")
    body = reply.split(b"\r\n", 1)[1]
    return body.count(b"\nid=") + (1 if body.startswith(b"id=") else 0)


def test_ten_thousand_connections(fresh_skein):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200 and hard >= 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    batch = max(50, min(1000, soft - 100))
    srv = fresh_skein()
    opened = 0
    deadline = time.time() + 120
    while opened < 10000 and time.time() < deadline:
        socks = []
        for _ in range(batch):
            socks.append(connect(srv.port))
        # Half of them say something before leaving.
        for s in socks[::2]:
            s.sendall(b"PING\r\n")
        for s in socks:
            s.close()
        opened += batch
    assert opened >= 10000
    watcher = RawConn(srv.port)
    deadline = time.time() + 30
    while client_count(watcher) > 1 and time.time() < deadline:
        time.sleep(0.1)
    assert client_count(watcher) == 1
    watcher.close()
    assert_serving(srv.port)


def test_deep_pipeline(redis_server, skein_server):
    n = 20000
    cmds = []
    for i in range(n):
        if i % 3 == 0:
            cmds.append(["SET", "dp:%d" % i, i])
        elif i % 3 == 1:
            cmds.append(["INCR", "dp:ctr"])
        else:
            cmds.append(["GET", "dp:%d" % (i - 2)])
    for name, port in both(redis_server, skein_server):
        c = RawConn(port, timeout=60)
        c.call("DEL", "dp:ctr")
        replies = c.pipeline(cmds)
        ctr = 0
        for i, r in enumerate(replies):
            if i % 3 == 0:
                assert r == b"+OK\r\n", (name, i)
            elif i % 3 == 1:
                ctr += 1
                assert r == b":%d\r\n" % ctr, (name, i)
            else:
                v = b"%d" % (i - 2)
                assert r == b"$%d\r\n%s\r\n" % (len(v), v), (name, i)
        c.close()
        assert_serving(port)


INLINE = (b'SET inl "hello world"\r\nGET inl\r\nECHO \'a b\'\r\nPING\n\r\n'
          b'   \r\nSET inl2 "\\x41\\n"\r\nGET inl2\r\nECHO "\\"q\\""\r\n')


def test_inline_commands(redis_server, skein_server):
    got = {}
    for name, port in both(redis_server, skein_server):
        c = RawConn(port)
        c.send_raw(INLINE)
        got[name] = [c.read_reply() for _ in range(7)]
        c.close()
        assert_serving(port)
    assert got["skein"] == got["redis"]
    assert got["skein"][1] == b"$11\r\nhello world\r\n"


def test_empty_multibulk(redis_server, skein_server):
    for name, port in both(redis_server, skein_server):
        c = RawConn(port)
        c.send_raw(b"*0\r\n*-1\r\n*-5\r\n" + encode(["PING"]))
        assert c.read_reply() == b"+PONG\r\n", name
        c.close()


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_unauthenticated_limits(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein, ["--requirepass", "secret"])
    s = connect(srv.port)
    s.sendall(b"*11\r\n")
    assert read_until_closed(s) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    s.close()
    s = connect(srv.port)
    s.sendall(b"*2\r\n$4\r\nECHO\r\n$16385\r\n")
    assert read_until_closed(s) == b"-ERR Protocol error: unauthenticated bulk length\r\n"
    s.close()
    # Authenticated, the same sizes are fine.
    c = RawConn(srv.port)
    assert c.call("GET", "x") == b"-NOAUTH Authentication required.\r\n"
    assert c.call("AUTH", "secret") == b"+OK\r\n"
    assert c.call("ECHO", b"z" * 16385) == b"$16385\r\n" + b"z" * 16385 + b"\r\n"
    assert c.call("DEL", *["k%d" % i for i in range(11)]) == b":0\r\n"
    c.close()


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_maxclients(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein, ["--maxclients", "5"])
    time.sleep(0.3)  # the fixture's readiness probe has left
    conns = [RawConn(srv.port) for _ in range(5)]
    for c in conns:
        assert c.call("PING") == b"+PONG\r\n"
    s = connect(srv.port)
    assert read_until_closed(s) == b"-ERR max number of clients reached\r\n"
    s.close()
    conns.pop().close()
    deadline = time.time() + 10
    while True:
        c = RawConn(srv.port)
        try:
            if c.call("PING") == b"+PONG\r\n":
                break
        except ConnectionError:
            pass
        finally:
            c.close()
        assert time.time() < deadline
        time.sleep(0.1)
    for c in conns:
        c.close()


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_idle_timeout(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein, ["--timeout", "1"])
    idle = connect(srv.port)
    busy = RawConn(srv.port)
    deadline = time.time() + 10
    closed = b"unset"
    idle.settimeout(0.2)
    while time.time() < deadline:
        assert busy.call("PING") == b"+PONG\r\n"
        try:
            closed = idle.recv(10)
            break
        except socket.timeout:
            pass
    assert closed == b""
    assert busy.call("PING") == b"+PONG\r\n"
    busy.close()
    idle.close()


@pytest.mark.parametrize("kind", ["redis", "skein"])
def test_shutdown_is_graceful(kind, fresh_redis, fresh_skein):
    srv = start(kind, fresh_redis, fresh_skein)
    other = RawConn(srv.port)
    assert other.call("PING") == b"+PONG\r\n"
    s = connect(srv.port)
    cmds = [["SET", "a", "1"], ["INCR", "a"], ["GET", "a"], ["SHUTDOWN", "NOSAVE"]]
    s.sendall(b"".join(encode(c) for c in cmds))
    got = read_until_closed(s)
    s.close()
    if kind == "skein":
        # Redis 7.0 exits inside SHUTDOWN without writing the replies already queued;
        # Skein delivers them first.
        assert got == b"+OK\r\n:2\r\n$1\r\n2\r\n"
    assert srv.proc.wait(timeout=15) == 0
    other.close()
