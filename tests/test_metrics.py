"""The engine's own figures: INFO's `# Threads` load fields, and the Prometheus endpoint
(`metrics-port`), scraped over HTTP and read with the official Python client's parser.
Values are checked for shape and for moving with the commands sent; never for timings."""
import os
import re
import socket
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import AGAINST_REDIS, ROOT, free_port
from resp_client import RawConn, parse

pytestmark = pytest.mark.skipif(AGAINST_REDIS, reason="Skein's own endpoint")


def get(port, path="/metrics", method="GET"):
    """(status, content type, body) of one HTTP request, retried while the endpoint starts."""
    deadline = time.time() + 10
    while True:
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.headers["Content-Type"], r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers["Content-Type"], e.read().decode()
        except (urllib.error.URLError, ConnectionError):
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def scrape(port):
    status, ctype, body = get(port)
    assert status == 200
    assert ctype == "text/plain; version=0.0.4; charset=utf-8"
    return {f.name: f for f in text_string_to_metric_families(body)}


def samples(fam, name=None, **labels):
    """The samples of a family (by sample name) whose labels include `labels`."""
    return [s for s in fam.samples
            if (name is None or s.name == name)
            and all(s.labels.get(k) == v for k, v in labels.items())]


def value(fams, family, name=None, **labels):
    found = samples(fams[family], name or family, **labels)
    assert len(found) == 1, (family, labels, fams[family].samples)
    return found[0].value


def info(conn, section):
    text = parse(conn.call("INFO", section)).decode()
    return dict(l.split(":", 1) for l in text.split("\r\n") if l and not l.startswith("#"))


@pytest.fixture
def metered(fresh_skein):
    mport = free_port()
    s = fresh_skein(["--metrics-port", str(mport)], workers=2)
    return s, mport


def test_off_by_default(skein_server):
    c = RawConn(skein_server.port)
    assert parse(c.call("CONFIG", "GET", "metrics-*")) == [
        b"metrics-port", b"0", b"metrics-bind", b"127.0.0.1"]


def test_scrape_names_types_and_labels(metered):
    s, mport = metered
    c = RawConn(s.port)
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("HSET", "h", "f", "v")
    c.call("GET")  # a rejected call (arity)
    c.call("INCR", "k")  # a failed call (not an integer)
    fams = scrape(mport)
    types = {
        # The exporter's names (INFO's figures)...
        "redis_up": "gauge",
        "redis_commands_processed": "counter",
        "redis_connected_clients": "gauge",
        "redis_memory_used_bytes": "gauge",
        "redis_keyspace_hits": "counter",
        "redis_keyspace_misses": "counter",
        "redis_expired_keys": "counter",
        "redis_evicted_keys": "counter",
        "redis_net_input_bytes": "counter",
        "redis_net_output_bytes": "counter",
        "redis_uptime_in_seconds": "gauge",
        "redis_start_time_seconds": "gauge",
        "redis_cpu_user_seconds": "counter",
        "redis_cpu_sys_seconds": "counter",
        "redis_db_keys": "gauge",
        "redis_db_keys_expiring": "gauge",
        "redis_commands": "counter",
        "redis_commands_duration_seconds": "counter",
        "redis_commands_failed_calls": "counter",
        "redis_commands_rejected_calls": "counter",
        "redis_commands_latencies_usec": "histogram",
        "redis_errors": "counter",
        "redis_instance_info": "gauge",
        "redis_rdb_last_bgsave_status": "gauge",
        "redis_config_maxmemory": "gauge",
        # ... and Skein's own.
        "skein_engine_cpu_utilization": "gauge",
        "skein_worker_cpu_seconds": "counter",
        "skein_worker_cpu_utilization": "gauge",
        "skein_worker_busy_ratio": "gauge",
        "skein_worker_busy_seconds": "counter",
        "skein_worker_awake_seconds": "counter",
        "skein_worker_commands_processed": "counter",
        "skein_shard_lock_waits": "counter",
        "skein_shard_lock_wait_seconds": "counter",
    }
    for name, t in types.items():
        assert name in fams, name
        assert fams[name].type == t, (name, fams[name].type)
    assert value(fams, "redis_up") == 1
    assert value(fams, "redis_db_keys", db="db0") == 2
    assert value(fams, "redis_db_keys_expiring", db="db0") == 0
    assert value(fams, "redis_commands", "redis_commands_total", cmd="set") == 1
    assert value(fams, "redis_commands", "redis_commands_total", cmd="hset") == 1
    assert value(fams, "redis_commands_failed_calls", "redis_commands_failed_calls_total",
                 cmd="incr") == 1
    assert value(fams, "redis_commands_rejected_calls",
                 "redis_commands_rejected_calls_total", cmd="get") == 1
    assert value(fams, "redis_errors", "redis_errors_total", err="ERR") == 2
    assert value(fams, "redis_rdb_last_bgsave_status") == 1
    info_labels = samples(fams["redis_instance_info"])[0].labels
    assert info_labels["redis_version"] == "7.0.15" and info_labels["role"] == "master"
    assert info_labels["tcp_port"] == str(s.port)
    assert value(fams, "redis_memory_used_bytes") > 0
    # One latency histogram per command called: cumulative buckets up to +Inf == count.
    buckets = samples(fams["redis_commands_latencies_usec"],
                      "redis_commands_latencies_usec_bucket", cmd="get")
    les = [b.labels["le"] for b in buckets]
    assert les[-1] == "+Inf" and len(les) > 10
    bounds = [float(l) for l in les[:-1]]
    assert bounds == sorted(bounds)
    counts = [b.value for b in buckets]
    assert counts == sorted(counts)
    assert counts[-1] == value(fams, "redis_commands_latencies_usec",
                               "redis_commands_latencies_usec_count", cmd="get") == 1
    # Per worker: CPU by mode, utilization and busy ratio within their ranges.
    for w in ("0", "1"):
        for mode in ("user", "sys"):
            assert value(fams, "skein_worker_cpu_seconds", "skein_worker_cpu_seconds_total",
                         worker=w, mode=mode) >= 0
        assert 0 <= value(fams, "skein_worker_busy_ratio", worker=w) <= 1
        assert value(fams, "skein_worker_cpu_utilization", worker=w) >= 0
    assert 0 <= value(fams, "skein_engine_cpu_utilization") <= 100
    assert value(fams, "skein_shard_lock_waits", "skein_shard_lock_waits_total") >= 0
    c.close()


def test_counters_move_after_commands(metered):
    s, mport = metered
    c = RawConn(s.port)
    before = scrape(mport)
    n = 200
    c.pipeline([("SET", "key%d" % i, "v") for i in range(n)])
    c.pipeline([("GET", "key0")] * n)
    c.call("GET", "missing")
    after = scrape(mport)

    def moved(family, name=None, **labels):
        return (value(after, family, name, **labels)
                - (value(before, family, name, **labels) if samples(
                    before[family], name or family, **labels) else 0))

    assert moved("redis_commands_processed", "redis_commands_processed_total") >= 2 * n
    assert moved("redis_commands", "redis_commands_total", cmd="set") == n
    assert moved("redis_commands_latencies_usec", "redis_commands_latencies_usec_count",
                 cmd="set") == n
    assert moved("redis_commands_duration_seconds",
                 "redis_commands_duration_seconds_total", cmd="set") >= 0
    assert moved("redis_keyspace_hits", "redis_keyspace_hits_total") >= n
    assert moved("redis_keyspace_misses", "redis_keyspace_misses_total") >= 1
    assert moved("redis_net_input_bytes", "redis_net_input_bytes_total") > 0
    assert moved("redis_net_output_bytes", "redis_net_output_bytes_total") > 0
    assert value(after, "redis_db_keys", db="db0") == n
    commands = sum(moved("skein_worker_commands_processed",
                         "skein_worker_commands_processed_total", worker=w)
                   for w in ("0", "1"))
    assert commands >= 2 * n
    busy = sum(value(after, "skein_worker_busy_seconds", "skein_worker_busy_seconds_total",
                     worker=w) for w in ("0", "1"))
    awake = sum(value(after, "skein_worker_awake_seconds",
                      "skein_worker_awake_seconds_total", worker=w) for w in ("0", "1"))
    assert 0 < busy <= awake
    c.close()


def test_names_in_skein_bench_alerts_are_exported(metered):
    """skein-bench capacity writes alert rules on these names: they must be the endpoint's."""
    _, mport = metered
    src = open(os.path.join(ROOT, "crates", "bench", "src", "alerts.rs")).read()
    names = re.findall(r'pub const \w+: &str = "(\w+)";', src)
    assert "redis_commands_processed_total" in names and len(names) >= 5
    _, _, body = get(mport)
    exported = {l.split("{")[0].split(" ")[0] for l in body.splitlines()
                if l and not l.startswith("#")}
    for n in names:
        assert n in exported, n


def test_http_edges(metered):
    _, mport = metered
    status, _, body = get(mport, "/")
    assert status == 404 and "/metrics" in body
    status, _, _ = get(mport, "/metrics", method="POST")
    assert status == 405
    # A client that sends nothing and leaves does not stop the endpoint.
    with socket.create_connection(("127.0.0.1", mport)):
        pass
    assert get(mport)[0] == 200


def test_config_set_moves_the_endpoint(metered):
    s, mport = metered
    c = RawConn(s.port)
    other = free_port()
    assert c.call("CONFIG", "SET", "metrics-port", str(other)) == b"+OK\r\n"
    assert get(other)[0] == 200
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", mport), timeout=2).close()
    # An address that cannot be bound (the server's own port): an error, nothing changes.
    reply = c.call("CONFIG", "SET", "metrics-port", str(s.port))
    assert reply.startswith(b"-ERR CONFIG SET failed"), reply
    assert parse(c.call("CONFIG", "GET", "metrics-port")) == [b"metrics-port",
                                                              str(other).encode()]
    assert get(other)[0] == 200
    assert c.call("CONFIG", "SET", "metrics-port", "0") == b"+OK\r\n"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", other), timeout=2).close()
    c.close()


def test_info_threads_load_fields(fresh_skein):
    s = fresh_skein(workers=2)
    c = RawConn(s.port)
    for i in range(300):
        c.call("SET", "k%d" % i, "v")
    t = info(c, "threads")
    assert t["workers"] == "2"
    e = float(t["engine_cpu_utilization"])
    assert 0 <= e <= 100 and re.match(r"^\d+\.\d\d$", t["engine_cpu_utilization"])
    for w in (0, 1):
        ratio = float(t["worker%d_busy_ratio" % w])
        assert 0 <= ratio <= 1
        assert float(t["worker%d_cpu_utilization" % w]) >= 0
        busy = float(t["worker%d_busy_seconds" % w])
        awake = float(t["worker%d_awake_seconds" % w])
        assert 0 <= busy <= awake
    assert sum(float(t["worker%d_busy_seconds" % w]) for w in (0, 1)) > 0
    c.close()


def test_shard_lock_waits_are_counted(metered):
    """A GET of a key whose shard a running script holds waits for it: one counted wait."""
    s, mport = metered
    # The two connections are on the two workers (each new one goes to the worker with the
    # fewest clients, once the first is counted), so the GET waits for the shard, not
    # behind the script on its worker.
    a = RawConn(s.port)
    a.call("PING")
    # The fixture's readiness probe (a connection opened and closed at once) may still be
    # counted on its worker: wait until `a` is the only client.
    for _ in range(500):
        t = info(a, "threads")
        if int(t["worker0_clients"]) + int(t["worker1_clients"]) == 1:
            break
        time.sleep(0.01)
    b = RawConn(s.port)
    t = info(b, "threads")
    assert (t["worker0_clients"], t["worker1_clients"]) == ("1", "1")
    before = value(scrape(mport), "skein_shard_lock_waits", "skein_shard_lock_waits_total")
    # The script holds k's shard for about a second (by the server's clock).
    script = ("local t0 = redis.call('TIME') local n = 0 "
              "repeat local t = redis.call('TIME') n = n + 1 "
              "until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 1000000 "
              "redis.call('SET', KEYS[1], n) return n")
    a.send_raw(b"*4\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n1\r\n$1\r\nk\r\n"
               % (len(script), script.encode()))
    # Once the EVAL is under way (its client's last command), the GET meets its shard held.
    deadline = time.time() + 10
    while b"cmd=eval" not in b.call("CLIENT", "LIST") and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert b.call("GET", "k").startswith(b"$")
    assert a.read_reply().startswith(b":")
    fams = scrape(mport)
    assert value(fams, "skein_shard_lock_waits", "skein_shard_lock_waits_total") >= before + 1
    assert value(fams, "skein_shard_lock_wait_seconds",
                 "skein_shard_lock_wait_seconds_total") > 0
    a.close()
    b.close()


def test_offload_pool_figures(fresh_skein):
    """Commands run on the offload pool show in the pool's own time and CPU figures."""
    mport = free_port()
    s = fresh_skein(["--metrics-port", str(mport), "--offload-threshold", "1"], workers=2)
    c = RawConn(s.port)
    c.call("RPUSH", "l", *range(100))
    for _ in range(50):
        c.call("LRANGE", "l", "0", "-1")
    t = info(c, "threads")
    assert float(t["offload_busy_seconds"]) > 0
    assert float(t["offload_cpu_seconds"]) > 0
    fams = scrape(mport)
    assert fams["skein_offload_busy_seconds"].type == "counter"
    assert value(fams, "skein_offload_busy_seconds", "skein_offload_busy_seconds_total") > 0
    assert value(fams, "skein_offload_cpu_seconds", "skein_offload_cpu_seconds_total") > 0
    c.close()
