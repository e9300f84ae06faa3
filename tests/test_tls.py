"""TLS (`tls-port`): Skein and redis-server 7.0.15 started with the same tls-* options,
over certificates made here with `openssl` (a CA, a server and a client certificate).

Replies over TLS compared byte for byte; client certificates required, optional or not
asked for; a big pipelined reply; many clients at once; start-up failures for bad
certificate files (exit code and log line); CONFIG SET tls-cert-file loading a new
certificate, and a bad one failing the CONFIG SET and keeping the old; plain and TLS
ports side by side. Servers listen on loopback only and are stopped by PID.
"""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import AGAINST_REDIS, SKEIN_BIN, ServerProc, free_port
from resp_client import RawConn

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _issue(d, name, subject, ext, ca="ca"):
    _openssl("req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", name + ".key",
             "-out", name + ".csr", "-subj", subject, cwd=d)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext)
    _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey",
             ca + ".key", "-CAcreateserial", "-out", name + ".crt", "-days", "2",
             "-extfile", name + ".ext", cwd=d)


@pytest.fixture(scope="module")
def certs():
    """ca, server, client, and a second server certificate (server2) from a second CA."""
    d = tempfile.mkdtemp(prefix="skein-tls-")
    for ca in ("ca", "ca2"):
        _openssl("req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout",
                 ca + ".key", "-out", ca + ".crt", "-days", "2", "-subj",
                 "/CN=Skein test " + ca, cwd=d)
    server_ext = ("basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                  "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _issue(d, "server", "/CN=localhost", server_ext)
    _issue(d, "server2", "/CN=localhost", server_ext, ca="ca2")
    _issue(d, "client", "/CN=client",
           "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    # Both CAs in one file, for clients that must trust either server certificate.
    with open(os.path.join(d, "both.crt"), "w") as out:
        for ca in ("ca", "ca2"):
            with open(os.path.join(d, ca + ".crt")) as f:
                out.write(f.read())
    yield {n: os.path.join(d, n) for n in os.listdir(d)} | {"dir": d}
    shutil.rmtree(d, ignore_errors=True)


def tls_args(c, auth="yes"):
    return ["--tls-cert-file", c["server.crt"], "--tls-key-file", c["server.key"],
            "--tls-ca-cert-file", c["ca.crt"], "--tls-auth-clients", auth]


def context(c, cert=True, cafile="ca.crt"):
    ctx = ssl.create_default_context(cafile=c[cafile])
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(c["client.crt"], c["client.key"])
    return ctx


class TlsConn(RawConn):
    """RawConn over TLS."""

    def __init__(self, port, ctx, timeout=10):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.buf = b""


class Server(ServerProc):
    """A server with a TLS port (and a plain one when `plain`), stopped by PID."""

    def __init__(self, kind, certs, extra=(), plain=False, wait=True):
        if kind == "skein" and AGAINST_REDIS:
            kind = "redis"
        self.kind = kind
        self.certs = certs
        self.tls_port = free_port()
        self.port = free_port() if plain else 0
        self.dir = tempfile.mkdtemp(prefix="skein-tls-srv-")
        binary = "redis-server" if kind == "redis" else SKEIN_BIN
        cmd = [binary, "--port", str(self.port), "--tls-port", str(self.tls_port),
               "--bind", "127.0.0.1", "--save", "", "--dir", self.dir,
               "--logfile", os.path.join(self.dir, "server.log")]
        if kind == "skein":
            cmd += ["--workers", "2"]
        self.log = open(os.path.join(self.dir, "stdout.log"), "w")
        self.proc = subprocess.Popen(cmd + list(extra), stdout=self.log,
                                     stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()

    def log_text(self):
        try:
            with open(os.path.join(self.dir, "server.log")) as f:
                return f.read()
        except OSError:
            return ""

    def wait_ready(self, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: %s" % self.log_text()[-2000:])
            try:
                c = TlsConn(self.tls_port, context(self.certs), timeout=2)
            except (OSError, ssl.SSLError):
                time.sleep(0.05)
                continue
            assert c.call("PING") == b"+PONG\r\n"
            c.close()
            return
        raise RuntimeError("no TLS listener on %d" % self.tls_port)

    def conn(self, **kw):
        return TlsConn(self.tls_port, context(self.certs, **kw))


COMMANDS = [
    ["PING"],
    ["SET", "k", "v"],
    ["GET", "k"],
    ["INCR", "n"],
    ["RPUSH", "l", "a", "b", "c"],
    ["LRANGE", "l", "0", "-1"],
    ["HSET", "h", "f", "1", "g", "2"],
    ["HGETALL", "h"],
    ["GET", "l"],
    ["NOSUCH"],
    ["HELLO", "3"],
    ["HGETALL", "h"],
    ["CONFIG", "GET", "tls-port"],
    ["CONFIG", "GET", "port"],
    ["CONFIG", "GET", "tls-auth-clients"],
    ["CONFIG", "GET", "tls-protocols"],
]


@pytest.fixture
def start(certs):
    """start(extra, plain): Redis and Skein with the same options; stopped at the end."""
    started = []

    def both(extra, plain=False):
        for kind in ("redis", "skein"):
            started.append(Server(kind, certs, extra=extra, plain=plain))
        return started[-2:]

    yield both
    for s in started:
        s.stop()


def test_same_replies_over_tls(certs, start):
    servers = start(tls_args(certs))
    replies = []
    for s in servers:
        c = s.conn()
        got = [c.call(*cmd) for cmd in COMMANDS]
        c.close()
        # CONFIG GET tls-port names each server's own port, HELLO its client id.
        got[COMMANDS.index(["CONFIG", "GET", "tls-port"])] = None
        got[COMMANDS.index(["HELLO", "3"])] = None
        replies.append(got)
    assert replies[0] == replies[1]


def test_client_list_and_info_for_tls_clients(certs, start):
    servers = start(tls_args(certs))
    for s in servers:
        c = s.conn()
        line = c.call("CLIENT", "LIST").decode()
        fields = [f.split("=")[0] for f in line.split("\r\n")[1].split(" ")]
        assert fields[:4] == ["id", "addr", "laddr", "fd"], line
        assert ("laddr=127.0.0.1:%d" % s.tls_port) in line
        info = c.call("INFO", "server").decode()
        # With no plain port, tcp_port shows the TLS port (as Redis does).
        assert ("tcp_port:%d" % s.tls_port) in info
        c.close()


def _handshake_refused(s, **kw):
    try:
        c = s.conn(**kw)
        # TLS 1.3: the server's refusal of the client certificate may arrive only
        # after the client thinks the handshake is done.
        c.call("PING")
    except (OSError, ssl.SSLError, ConnectionError):
        return True
    c.close()
    return False


@pytest.mark.parametrize("auth,refused", [("yes", True), ("optional", False), ("no", False)])
def test_tls_auth_clients(certs, start, auth, refused):
    servers = start(tls_args(certs, auth))
    for s in servers:
        assert _handshake_refused(s, cert=False) == refused, s.kind
        # With a certificate, always served.
        c = s.conn()
        assert c.call("PING") == b"+PONG\r\n"
        c.close()
    if refused:
        for s in servers:
            assert "Error accepting a client connection" in s.log_text(), s.kind


def test_auth_clients_can_change_at_run_time(certs, start):
    servers = start(tls_args(certs, "yes"))
    for s in servers:
        assert _handshake_refused(s, cert=False)
        c = s.conn()
        assert c.call("CONFIG", "SET", "tls-auth-clients", "no") == b"+OK\r\n"
        assert not _handshake_refused(s, cert=False)
        c.close()


def test_big_pipelined_replies(certs, start):
    servers = start(tls_args(certs))
    results = []
    for s in servers:
        c = s.conn()
        big = "x" * (1024 * 1024)
        assert c.call("SET", "big", big) == b"+OK\r\n"
        for i in range(0, 10000, 1000):
            c.call("RPUSH", "list", *[str(j) for j in range(i, i + 1000)])
        replies = c.pipeline([["GET", "big"], ["LRANGE", "list", "0", "-1"]] * 4
                             + [["STRLEN", "big"]])
        results.append(replies)
        c.close()
    assert results[0] == results[1]
    assert results[1][0] == b"$1048576\r\n" + b"x" * 1048576 + b"\r\n"


def test_big_request_over_tls(certs, start):
    servers = start(tls_args(certs))
    for s in servers:
        c = s.conn()
        cmds = [["SET", "k%d" % i, "v" * 2000] for i in range(2000)]
        assert all(r == b"+OK\r\n" for r in c.pipeline(cmds))
        assert c.call("DBSIZE") == b":2000\r\n"
        c.close()


def test_many_clients_at_once(certs, start):
    servers = start(tls_args(certs))
    for s in servers:
        errors = []

        def client(i, port=s.tls_port):
            try:
                c = TlsConn(port, context(certs))
                for j in range(20):
                    assert c.call("INCR", "counter") .startswith(b":")
                    assert c.call("SET", "c%d" % i, j) == b"+OK\r\n"
                c.close()
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(repr(e))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        c = s.conn()
        assert c.call("GET", "counter") == b"$4\r\n1000\r\n"
        c.close()


def test_plain_and_tls_ports_at_once(certs, start):
    servers = start(tls_args(certs), plain=True)
    for s in servers:
        t = s.conn()
        p = RawConn(s.port)
        assert t.call("SET", "shared", "1") == b"+OK\r\n"
        assert p.call("GET", "shared") == b"$1\r\n1\r\n"
        assert p.call("INFO", "server").decode().count("tcp_port:%d" % s.port) == 1
        # A plain client on the TLS port gets no reply.
        raw = socket.create_connection(("127.0.0.1", s.tls_port), timeout=5)
        raw.sendall(b"PING\r\n")
        try:
            data = raw.recv(100)
        except OSError:
            data = b""
        assert b"PONG" not in data
        raw.close()
        t.close()
        p.close()


BAD_STARTS = [
    ("missing cert", lambda c: ["--tls-cert-file", c["dir"] + "/nope.crt"],
     "Failed to load certificate: "),
    ("missing key", lambda c: ["--tls-key-file", c["dir"] + "/nope.key"],
     "Failed to load private key: "),
    ("key of another cert", lambda c: ["--tls-key-file", c["client.key"]],
     "Failed to load private key: "),
    ("not a certificate", lambda c: ["--tls-cert-file", c["server.ext"]],
     "Failed to load certificate: "),
    ("missing CA", lambda c: ["--tls-ca-cert-file", c["dir"] + "/nope.crt"],
     "Failed to configure CA certificate(s) file/directory: "),
    ("no CA with auth", lambda c: ["--tls-ca-cert-file", ""],
     "Either tls-ca-cert-file or tls-ca-cert-dir must be specified"),
    ("bad protocols", lambda c: ["--tls-protocols", "TLSv9"],
     "Invalid tls-protocols specified."),
    ("bad ciphers", lambda c: ["--tls-ciphers", "NOSUCHCIPHER"],
     "Failed to configure ciphers: NOSUCHCIPHER"),
]


@pytest.mark.parametrize("name,args,line", BAD_STARTS, ids=[b[0] for b in BAD_STARTS])
def test_bad_tls_files_fail_the_start(certs, name, args, line):
    for kind in ("redis", "skein"):
        s = Server(kind, certs, extra=tls_args(certs) + args(certs), wait=False)
        try:
            assert s.proc.wait(timeout=15) == 1, kind
            log = s.log_text()
            assert line in log, (kind, log[-1500:])
            assert "Failed to configure TLS. Check logs for more info." in log, kind
        finally:
            s.stop()


def _server_cert_serial(port, certs):
    ctx = ssl.create_default_context(cafile=certs["both.crt"])
    ctx.check_hostname = False
    ctx.load_cert_chain(certs["client.crt"], certs["client.key"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert()["issuer"]


def test_config_set_loads_new_certificates(certs, start):
    servers = start(tls_args(certs))
    for s in servers:
        c = s.conn()
        before = _server_cert_serial(s.tls_port, certs)
        # A bad file fails the CONFIG SET, and the old certificate and value stay.
        bad = c.call("CONFIG", "SET", "tls-cert-file", certs["dir"] + "/nope.crt")
        assert bad == (b"-ERR CONFIG SET failed (possibly related to argument "
                       b"'tls-cert-file') - Unable to update TLS configuration. "
                       b"Check server logs.\r\n"), s.kind
        assert c.call("CONFIG", "GET", "tls-cert-file") == (
            b"*2\r\n$13\r\ntls-cert-file\r\n$%d\r\n%s\r\n"
            % (len(certs["server.crt"]), certs["server.crt"].encode()))
        assert _server_cert_serial(s.tls_port, certs) == before
        # Certificate and key together, from the second CA.
        ok = c.call("CONFIG", "SET", "tls-cert-file", certs["server2.crt"],
                    "tls-key-file", certs["server2.key"])
        assert ok == b"+OK\r\n", s.kind
        after = _server_cert_serial(s.tls_port, certs)
        assert after != before and "ca2" in str(after), s.kind
        # The connection made before goes on with the old session.
        assert c.call("PING") == b"+PONG\r\n"
        # A certificate whose key does not match fails as a whole.
        bad = c.call("CONFIG", "SET", "tls-key-file", certs["client.key"])
        assert bad.startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                              b"'tls-key-file')"), s.kind
        assert c.call("CONFIG", "GET", "tls-key-file").endswith(
            certs["server2.key"].encode() + b"\r\n")
        c.close()


def test_protocols_and_ciphersuites(certs, start):
    servers = start(tls_args(certs) + [
        "--tls-protocols", "TLSv1.2", "--tls-ciphers", "ECDHE-RSA-AES128-GCM-SHA256"])
    for s in servers:
        ctx = context(certs)
        c = TlsConn(s.tls_port, ctx)
        assert c.sock.version() == "TLSv1.2", s.kind
        assert c.sock.cipher()[0] == "ECDHE-RSA-AES128-GCM-SHA256", s.kind
        c.close()
        ctx13 = context(certs)
        ctx13.minimum_version = ssl.TLSVersion.TLSv1_3
        with pytest.raises((ssl.SSLError, OSError)):
            TlsConn(s.tls_port, ctx13)


def test_redis_cli_over_tls(certs, start):
    if shutil.which("redis-cli") is None:
        pytest.skip("needs redis-cli")
    servers = start(tls_args(certs))
    outs = []
    for s in servers:
        base = ["redis-cli", "-p", str(s.tls_port), "--tls", "--cert", certs["client.crt"],
                "--key", certs["client.key"], "--cacert", certs["ca.crt"]]
        subprocess.run(base + ["RPUSH", "l", "1", "2", "3"], check=True,
                       capture_output=True)
        outs.append(subprocess.run(base + ["LRANGE", "l", "0", "-1"], check=True,
                                   capture_output=True).stdout)
    assert outs[0] == outs[1] == b"1\n2\n3\n"


def test_slow_reader_gets_every_byte(certs, start):
    """Replies bigger than the socket takes wait in the server (TLS records included)
    and leave on the writable edges as the client reads."""
    for s in start(tls_args(certs)):
        c = s.conn()
        assert c.call("SET", "big", "y" * 2_000_000) == b"+OK\r\n"
        c.send_raw(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 20)
        time.sleep(1)
        want = 20 * len(b"$2000000\r\n" + b"y" * 2_000_000 + b"\r\n")
        got = 0
        while got < want:
            chunk = c.sock.recv(1 << 20)
            assert chunk, s.kind
            got += len(chunk)
        assert got == want
        assert c.call("PING") == b"+PONG\r\n"
        c.close()


def test_broken_handshakes_leave_the_server_serving(certs, start):
    """Garbage, a half ClientHello, a close before any byte, a client gone mid-command:
    each connection ends, the server goes on and counts none of them."""
    for s in start(tls_args(certs, "optional")):
        left = []
        for data in (b"PING\r\n", b"\x16\x03\x01\x00\x50half", b""):
            raw = socket.create_connection(("127.0.0.1", s.tls_port), timeout=5)
            if data:
                raw.sendall(data)
            left.append(raw)
        mid = s.conn()
        mid.send_raw(b"*2\r\n$3\r\nGET\r\n$1\r\n")
        left.append(mid.sock)
        for raw in left:
            raw.close()
        c = s.conn()
        deadline = time.time() + 10
        while time.time() < deadline:
            info = c.call("INFO", "clients").decode()
            if "connected_clients:1\r\n" in info:
                break
            time.sleep(0.05)
        assert "connected_clients:1\r\n" in info, (s.kind, info)
        c.close()


def test_ca_cert_dir(certs, start):
    """Client certificates checked against a directory of CA certificates (hashed names,
    as `openssl rehash` makes them for OpenSSL's lookup)."""
    d = os.path.join(certs["dir"], "cadir")
    os.makedirs(d, exist_ok=True)
    shutil.copy(certs["ca.crt"], os.path.join(d, "ca.pem"))
    _openssl("rehash", d, cwd=d)
    args = ["--tls-cert-file", certs["server.crt"], "--tls-key-file", certs["server.key"],
            "--tls-ca-cert-dir", d, "--tls-auth-clients", "yes"]
    for s in start(args):
        c = s.conn()
        assert c.call("PING") == b"+PONG\r\n", s.kind
        c.close()
        assert _handshake_refused(s, cert=False), s.kind


def _tls_listening(port, certs):
    try:
        c = TlsConn(port, context(certs), timeout=2)
    except (OSError, ssl.SSLError):
        return False
    ok = c.call("PING") == b"+PONG\r\n"
    c.close()
    return ok


def test_config_set_tls_port_moves_the_listener(certs, start):
    for s in start(tls_args(certs), plain=True):
        p = RawConn(s.port)
        new = free_port()
        assert p.call("CONFIG", "SET", "tls-port", new) == b"+OK\r\n", s.kind
        assert _tls_listening(new, certs), s.kind
        assert not _tls_listening(s.tls_port, certs), s.kind
        # A port already taken fails, and the listener stays where it was.
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            busy = taken.getsockname()[1]
            bad = p.call("CONFIG", "SET", "tls-port", busy)
            assert bad == (b"-ERR CONFIG SET failed (possibly related to argument "
                           b"'tls-port') - Unable to listen on this port. Check server "
                           b"logs.\r\n"), (s.kind, bad)
        assert p.call("CONFIG", "GET", "tls-port") == (
            b"*2\r\n$8\r\ntls-port\r\n$%d\r\n%d\r\n" % (len(str(new)), new))
        assert _tls_listening(new, certs), s.kind
        # 0: no TLS listener.
        assert p.call("CONFIG", "SET", "tls-port", 0) == b"+OK\r\n"
        assert not _tls_listening(new, certs), s.kind
        assert p.call("PING") == b"+PONG\r\n"
        p.close()


@pytest.mark.parametrize("password,starts", [("s3cret", True), ("wrong", False), (None, False)])
def test_encrypted_key_with_tls_key_file_pass(certs, password, starts):
    key = os.path.join(certs["dir"], "server.enc.key")
    if not os.path.exists(key):
        _openssl("pkcs8", "-topk8", "-in", certs["server.key"], "-out", key, "-passout",
                 "pass:s3cret", "-v2", "aes-256-cbc", cwd=certs["dir"])
    args = tls_args(certs) + ["--tls-key-file", key]
    if password is not None:
        args += ["--tls-key-file-pass", password]
    for kind in ("redis", "skein"):
        s = Server(kind, certs, extra=args, wait=False)
        try:
            if starts:
                s.wait_ready()
            else:
                assert s.proc.wait(timeout=15) == 1, kind
                assert "Failed to load private key: " + key in s.log_text(), kind
        finally:
            s.stop()


def _wait(pred, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


def test_replica_of_a_tls_master(certs):
    """tls-replication yes: Redis and Skein replicas of one redis-server master that
    listens on TLS only and asks for client certificates."""
    master = Server("redis", certs, extra=tls_args(certs) + ["--repl-diskless-sync-delay", "0"])
    replicas = []
    try:
        m = master.conn()
        assert m.call("SET", "before", "1") == b"+OK\r\n"
        for kind in ("redis", "skein"):
            replicas.append(Server(kind, certs, plain=True, extra=tls_args(certs) + [
                "--tls-replication", "yes",
                "--tls-client-cert-file", certs["client.crt"],
                "--tls-client-key-file", certs["client.key"],
                "--replicaof", "127.0.0.1", str(master.tls_port)]))
        conns = [RawConn(r.port) for r in replicas]
        for c, r in zip(conns, replicas):
            assert _wait(lambda c=c: b"master_link_status:up" in c.call("INFO", "replication")), \
                (r.kind, r.log_text()[-2000:])
        m.call("RPUSH", "list", *[str(i) for i in range(1000)])
        m.call("SET", "big", "z" * 300_000)
        m.call("SET", "last", "1")
        for c, r in zip(conns, replicas):
            assert _wait(lambda c=c: c.call("GET", "last") == b"$1\r\n1\r\n"), r.kind
        replies = [[c.call("GET", "before"), c.call("LRANGE", "list", "0", "-1"),
                    c.call("STRLEN", "big")] for c in conns]
        assert replies[0] == replies[1]
        assert replies[1][2] == b":300000\r\n"
        for c in conns:
            c.close()
        m.close()
    finally:
        for s in replicas + [master]:
            s.stop()


def test_x509_v1_server_certificate(certs, start):
    """A server certificate signed without extensions (`openssl x509 -req` alone makes
    X.509 v1) is served, as OpenSSL serves it for Redis; a key that is not the
    certificate's still fails the start."""
    d = certs["dir"]
    _openssl("req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", "v1.key", "-out",
             "v1.csr", "-subj", "/CN=localhost", cwd=d)
    _openssl("x509", "-req", "-in", "v1.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "v1.crt", "-days", "2", cwd=d)
    args = ["--tls-cert-file", os.path.join(d, "v1.crt"), "--tls-key-file",
            os.path.join(d, "v1.key"), "--tls-auth-clients", "no"]
    got = []
    for s in start(args):
        c = TlsConn(s.tls_port, context(certs, cert=False))
        got.append(c.call("PING"))
        c.close()
    assert got == [b"+PONG\r\n", b"+PONG\r\n"]
    for binary in ("redis-server", SKEIN_BIN):
        r = subprocess.run([binary, "--port", "0", "--tls-port", str(free_port()), "--bind",
                            "127.0.0.1", "--save", "", "--tls-cert-file",
                            os.path.join(d, "v1.crt"), "--tls-key-file",
                            certs["server.key"], "--tls-auth-clients", "no"],
                           capture_output=True, timeout=20)
        assert r.returncode == 1 and b"key values mismatch" in r.stdout, (binary, r)
