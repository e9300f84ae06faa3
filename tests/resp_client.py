"""A minimal raw RESP client: sends commands, returns each reply's exact bytes."""
import socket


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawConn:
    def __init__(self, port, host="127.0.0.1", timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def _line(self, pos):
        while True:
            i = self.buf.find(b"\r\n", pos)
            if i >= 0:
                return i
            self._fill()

    def _need(self, n):
        while len(self.buf) < n:
            self._fill()

    def _reply_end(self, pos):
        """Index just past the reply starting at pos."""
        self._need(pos + 1)
        t = self.buf[pos:pos + 1]
        eol = self._line(pos)
        head = self.buf[pos + 1:eol]
        if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return eol + 2
        if t in (b"$", b"=", b"!"):
            n = int(head)
            if n < 0:
                return eol + 2
            self._need(eol + 2 + n + 2)
            return eol + 2 + n + 2
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = int(head)
            if n < 0:
                return eol + 2
            if t in (b"%", b"|"):
                n *= 2
            p = eol + 2
            for _ in range(n):
                p = self._reply_end(p)
            if t == b"|":  # an attribute precedes the real reply
                p = self._reply_end(p)
            return p
        raise ValueError("bad reply type %r in %r" % (t, self.buf[pos:pos + 80]))

    def read_reply(self):
        end = self._reply_end(0)
        raw, self.buf = self.buf[:end], self.buf[end:]
        return raw

    def call(self, *args):
        self.send_raw(encode(args))
        return self.read_reply()

    def pipeline(self, commands):
        self.send_raw(b"".join(encode(c) for c in commands))
        return [self.read_reply() for _ in commands]


def parse(raw):
    """Decode a raw reply into Python values (bytes, int, list, dict, None, errors as
    ('err', text))."""
    val, _ = _parse(raw, 0)
    return val


def _parse(raw, pos):
    t = raw[pos:pos + 1]
    eol = raw.index(b"\r\n", pos)
    head = raw[pos + 1:eol]
    nxt = eol + 2
    if t == b"+":
        return head, nxt
    if t == b"-":
        return ("err", head.decode(errors="replace")), nxt
    if t == b":":
        return int(head), nxt
    if t == b"_":
        return None, nxt
    if t == b",":
        return float(head), nxt
    if t == b"#":
        return head == b"t", nxt
    if t == b"(":
        return int(head), nxt
    if t in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return None, nxt
        return raw[nxt:nxt + n], nxt + n + 2
    if t in (b"*", b"~", b">"):
        n = int(head)
        if n < 0:
            return None, nxt
        out = []
        for _ in range(n):
            v, nxt = _parse(raw, nxt)
            out.append(v)
        return out, nxt
    if t == b"%":
        n = int(head)
        out = []
        for _ in range(n):
            k, nxt = _parse(raw, nxt)
            v, nxt = _parse(raw, nxt)
            out.append((k, v))
        return out, nxt
    raise ValueError(t)


class NamedConns:
    """Named connections to one server, opened on first use (HELLO 3 first under
    RESP3); `log` collects what a test's steps got back."""

    def __init__(self, port, proto):
        self.port, self.proto = port, proto
        self.conns = {}
        self.log = []

    def conn(self, name):
        if name not in self.conns:
            c = RawConn(self.port)
            if self.proto == 3:
                c.call("HELLO", "3")
            self.conns[name] = c
        return self.conns[name]

    def close(self):
        for c in self.conns.values():
            c.close()


def compare_sessions(session_cls, redis_port, skein_port, proto, steps):
    """Run `steps(session)` on a fresh `session_cls(port, proto)` against each server and
    assert that every logged step got the same thing back."""
    logs = []
    for port in (redis_port, skein_port):
        s = session_cls(port, proto)
        try:
            steps(s)
        finally:
            s.close()
        logs.append(s.log)
    for (step, want), (_, got) in zip(*logs):
        assert got == want, "step %s\nredis: %r\nskein: %r" % (step, want, got)
    assert len(logs[0]) == len(logs[1])
