"""`offload-nice` (Skein only): the nice value of the offload pool's threads, -20..19 as
setpriority takes, default 10. Set in the config file, with `--offload-nice N`, or by
CONFIG SET, which threads already running apply before their next command. Bad values
get the errors of Redis's other ranged integer options (maxmemory-samples stands in for
Redis's side).
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

from resp_client import RawConn, parse
from conftest import SKEIN_BIN
from test_config import Started, config_map, run_both

DEADLINE_S = 30


def pool_nice_values(pid):
    """{thread name: nice} of the server's offload pool threads, from /proc."""
    found = {}
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        try:
            with open(os.path.join(task, tid, "comm")) as f:
                name = f.read().strip()
            with open(os.path.join(task, tid, "stat")) as f:
                stat = f.read()
        except OSError:
            continue
        if name.startswith("skein-offload-"):
            # Fields after the ")" that ends the name start at field 3 (state); nice is 19.
            found[name] = int(stat.rsplit(")", 1)[1].split()[16])
    return found


def run_on_pool(conn):
    """A command the pool runs (`offload-threshold 1`): its thread applies the value."""
    conn.call("SADD", "s", "1", "2")
    assert parse(conn.call("SUNIONSTORE", "d", "s", "s")) == 2


def test_default_and_config_get(fresh_skein):
    s = fresh_skein()
    c = RawConn(s.port)
    try:
        assert config_map(c, "offload-nice") == {b"offload-nice": b"10"}
        assert b"offload-nice" in config_map(c, "offload-*")
    finally:
        c.close()


def test_start_value_and_config_set_reach_the_pool_threads(fresh_skein):
    s = fresh_skein(extra=["--offload-threshold", "1", "--offload-threads", "1",
                           "--offload-nice", "12"])
    c = RawConn(s.port)
    try:
        assert config_map(c, "offload-nice") == {b"offload-nice": b"12"}
        run_on_pool(c)
        assert pool_nice_values(s.pid) == {"skein-offload-0": 12}
        # Higher only: lowering a nice value needs a privilege the test may not have.
        assert c.call("CONFIG", "SET", "offload-nice", "17") == b"+OK\r\n"
        assert config_map(c, "offload-nice") == {b"offload-nice": b"17"}
        end = time.time() + DEADLINE_S
        while True:
            run_on_pool(c)
            if pool_nice_values(s.pid) == {"skein-offload-0": 17}:
                break
            assert time.time() < end, pool_nice_values(s.pid)
    finally:
        c.close()


def test_config_file_value():
    d = tempfile.mkdtemp(prefix="skein-nice-")
    with open(os.path.join(d, "skein.conf"), "w") as f:
        f.write("offload-nice -3\n")
    s = Started("skein", ["skein.conf", "--port", "{port}", "--bind", "127.0.0.1",
                          "--save", ""], cwd=d)
    c = RawConn(s.port)
    try:
        assert config_map(c, "offload-nice") == {b"offload-nice": b"-3"}
    finally:
        c.close()
        s.stop()


def test_bad_values_refused_as_redis_refuses_its_ranged_integers(redis_server, fresh_skein):
    s = fresh_skein()
    r, c = RawConn(redis_server.port), RawConn(s.port)
    try:
        for bad, bad_redis in (("20", "0"), ("-21", "-1"), ("abc", "abc"), ("1.5", "1.5")):
            want = r.call("CONFIG", "SET", "maxmemory-samples", bad_redis)
            want = want.replace(b"maxmemory-samples", b"offload-nice")
            want = re.sub(rb"between \S+ and \S+", b"between -20 and 19", want)
            assert want.startswith(b"-ERR")
            assert c.call("CONFIG", "SET", "offload-nice", bad) == want
        assert config_map(c, "offload-nice") == {b"offload-nice": b"10"}
    finally:
        r.close()
        c.close()


def test_bad_start_value_is_fatal_as_redis_ranged_integers():
    d = tempfile.mkdtemp(prefix="skein-nice-")
    try:
        rc, text = run_both(["--maxmemory-samples", "0"], d)["redis"]
        assert rc == 1
        text = text.replace("maxmemory-samples \"0\"", "offload-nice \"20\"")
        text = re.sub(r"between \S+ and \S+", "between -20 and 19", text)
        p = subprocess.run([SKEIN_BIN, "--offload-nice", "20"], cwd=d, capture_output=True,
                           timeout=20)
        assert (p.returncode, p.stderr.decode(errors="replace")) == (1, text)
    finally:
        shutil.rmtree(d, ignore_errors=True)
