"""A big list: 10,000,000 elements built with pipelined RPUSH/LPUSH batches, then read
back in part (LLEN, LINDEX at both ends and the middle, LRANGE windows, LPOS with MAXLEN,
LSET and LINSERT deep inside, counted pops, LTRIM) while another client's PINGs keep being
answered.

Cost: one of the most expensive list tests: about 110 MB of requests and a few hundred MB
of server memory; with a debug build some tens of seconds on 2 cores. It asserts no
timings."""

from pinger import Pinger
from resp_client import RawConn, parse

N = 10_000_000
PER_COMMAND = 5_000      # elements per push
PIPELINE = 20            # pushes in flight per round trip


def push_batches(key):
    """RPUSH 0..N/2-1 in order and LPUSH -1..-N/2 so the list reads -N/2 .. N/2-1."""
    half = N // 2
    step = PER_COMMAND * PIPELINE
    for start in range(0, half, step):
        chunks = []
        for lo in range(start, min(start + step, half), PER_COMMAND):
            hi = min(lo + PER_COMMAND, half)
            for cmd, vals in ((b"RPUSH", range(lo, hi)), (b"LPUSH", range(-lo - 1, -hi - 1, -1))):
                parts = [b"*%d\r\n$5\r\n%s\r\n$%d\r\n%s\r\n" % (hi - lo + 2, cmd, len(key), key)]
                parts += [b"$%d\r\n%d\r\n" % (len(b"%d" % i), i) for i in vals]
                chunks.append(b"".join(parts))
        yield chunks




def test_ten_million_element_list(skein_server):
    key = b"biglist"
    half = N // 2
    conn = RawConn(skein_server.port, timeout=300)
    pinger = Pinger(skein_server.port)
    pinger.start()
    try:
        last = 0
        for chunks in push_batches(key):
            conn.send_raw(b"".join(chunks))
            for _ in chunks:
                last = parse(conn.read_reply())
        assert last == N
        before = pinger.pongs
        assert conn.call("LLEN", key) == b":%d\r\n" % N
        assert conn.call("OBJECT", "ENCODING", key) == b"$9\r\nquicklist\r\n"
        assert parse(conn.call("LINDEX", key, "0")) == b"%d" % -half
        assert parse(conn.call("LINDEX", key, "-1")) == b"%d" % (half - 1)
        assert parse(conn.call("LINDEX", key, str(half))) == b"0"
        assert parse(conn.call("LINDEX", key, str(half + 1234567))) == b"1234567"
        window = parse(conn.call("LRANGE", key, str(half - 50), str(half + 49)))
        assert window == [b"%d" % i for i in range(-50, 50)]
        assert parse(conn.call("LRANGE", key, "-3", "-1")) == [b"%d" % i for i in range(half - 3, half)]
        assert parse(conn.call("LPOS", key, "-4999990")) == 10
        assert parse(conn.call("LPOS", key, "4999999", "RANK", "-1")) == N - 1
        assert conn.call("LPOS", key, "0", "MAXLEN", "1000") == b"$-1\r\n"
        assert conn.call("LSET", key, str(half + 3), "three") == b"+OK\r\n"
        assert conn.call("LINSERT", key, "AFTER", "three", "after-three") == b":%d\r\n" % (N + 1)
        assert parse(conn.call("LRANGE", key, str(half + 2), str(half + 5))) == [
            b"2", b"three", b"after-three", b"4"]
        assert len(parse(conn.call("LPOP", key, "1000"))) == 1000
        assert len(parse(conn.call("RPOP", key, "1000"))) == 1000
        assert conn.call("LTRIM", key, "1000", "-1001") == b"+OK\r\n"
        assert conn.call("LLEN", key) == b":%d\r\n" % (N + 1 - 4000)
        assert conn.call("DEL", key) == b":1\r\n"
        assert conn.call("EXISTS", key) == b":0\r\n"
        assert before >= 1  # PINGs were answered while the list was built
        pinger.stop_after_pong_since(before)  # and still are served
        assert not pinger.bad
        assert pinger.pongs > before
    finally:
        pinger.stop.set()
        conn.call("DEL", key)
        conn.close()
