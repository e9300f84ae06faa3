"""RDB persistence against redis-server 7.0.15: files written by either server load into
the other with every key, value, encoding and TTL equal; redis-check-rdb accepts Skein's
files; damaged files are refused with Redis's messages; SAVE, BGSAVE, LASTSAVE, DEBUG
RELOAD, SHUTDOWN SAVE/NOSAVE, saving on SIGTERM, the `save` rules, INFO persistence and
stop-writes-on-bgsave-error. Every server runs in a temporary `dir`."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import ServerProc, free_port, wait_port, SKEIN_BIN

CHECK_RDB = shutil.which("redis-check-rdb") or "redis-check-rdb"


def client(s, db=0):
    return redis.Redis(port=s.port, db=db, socket_timeout=30)


def wait_loaded(port, timeout=60):
    """Until the server has loaded its dataset (commands answer -LOADING before)."""
    r = redis.Redis(port=port)
    deadline = time.time() + timeout
    while True:
        try:
            r.ping()
            return
        except redis.BusyLoadingError:
            if time.time() > deadline:
                raise
            time.sleep(0.02)


def populate(r0):
    """Keys of every type and encoding Redis 7.0 writes, TTLs, several databases."""
    p = r0.pipeline(transaction=False)
    p.set("int", 12345)
    p.set("neg", -7)
    p.set("big", "9223372036854775807")
    p.set("emb", "hello")
    p.set("raw", "x" * 100)
    p.set("compressible", "abc" * 200)
    p.set(b"bin\x00\xff", b"\x00\x01\x02" * 30)
    p.set("ttl", "v", px=3_600_000)
    p.set("ttl2", "w", ex=100_000)
    p.rpush("list_small", "a", "b", 3, "d" * 70)
    p.rpush("list_big", *[f"element-{i}" * 3 for i in range(2000)])
    p.rpush("list_ints", *range(600))
    p.rpush("list_plain", "a", "p" * 10000, "b")  # a plain quicklist node (> 8 kB)
    p.sadd("set_int64", 1 << 40, -(1 << 50), 7)  # a 64-bit intset
    p.zadd("zset_ints", {"a": 1, "b": -2, "c": 300000})  # listpack of integer scores
    p.hset("hash_ints", mapping={1: 2, 300000: -5})  # listpack of integers
    # Compressed quicklist nodes (list-compress-depth 1), saved as LZF blobs.
    p.config_set("list-compress-depth", 1)
    p.rpush("list_compressed", *[("compressible-%d-" % (i % 7)) * 8 for i in range(3000)])
    p.config_set("list-compress-depth", 0)
    p.hset("hash_small", mapping={"f1": "v1", "f2": 2})
    p.hset("hash_big", mapping={f"field{i}": f"value{i}" for i in range(300)})
    p.hset("hash_longval", mapping={"f": "v" * 100})
    p.sadd("set_ints", *range(50))
    p.sadd("set_big_ints", *range(1000))
    p.sadd("set_strs", "a", "b", "c")
    p.zadd("zset_small", {"a": 1, "b": 2.5, "c": -3})
    p.zadd("zset_big", {f"m{i}": i / 7 for i in range(300)})
    p.zadd("zset_inf", {"x": float("inf"), "y": float("-inf")})
    for i in range(300):
        p.xadd("stream", {"f": i, "g": "v" * (i % 50)}, id="%d-1" % (i + 1))
    p.xdel("stream", "5-1", "77-1")
    p.xgroup_create("stream", "grp", id="0")
    p.xreadgroup("grp", "alice", {"stream": ">"}, count=30)
    p.xreadgroup("grp", "bob", {"stream": ">"}, count=5)
    p.xack("stream", "grp", "3-1")
    p.xgroup_create("stream_empty", "g", id="$", mkstream=True)
    p.expire("list_big", 50_000)
    p.execute()
    r3 = redis.Redis(port=r0.connection_pool.connection_kwargs["port"], db=3)
    r3.set("in_db3", "yes")
    r3.rpush("list3", "z")


def snapshot(s):
    """Every key of every database: type, encoding, expiry and value."""
    wait_loaded(s.port)
    out = {}
    for db in range(16):
        r = client(s, db)
        for k in r.scan_iter(count=1000):
            t = r.type(k).decode()
            if t == "string":
                v = r.get(k)
            elif t == "list":
                v = r.lrange(k, 0, -1)
            elif t == "hash":
                v = sorted(r.hgetall(k).items())
            elif t == "set":
                v = sorted(r.smembers(k))
            elif t == "zset":
                v = r.zrange(k, 0, -1, withscores=True)
            elif t == "stream":
                v = (r.xrange(k), r.xinfo_groups(k), r.xpending(k, "grp") if k == b"stream"
                     else None, r.execute_command("XINFO", "STREAM", k))
            else:
                v = None
            out[(db, k)] = (t, r.object("encoding", k), r.pexpiretime(k), v)
    return out


def save_and_copy(src, dst_dir):
    r = client(src)
    assert r.save()
    shutil.copy(os.path.join(r.config_get("dir")["dir"], "dump.rdb"),
                os.path.join(dst_dir, "dump.rdb"))


def test_redis_file_loads_into_skein(fresh_redis, fresh_skein):
    red = fresh_redis()
    populate(client(red))
    want = snapshot(red)
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        save_and_copy(red, d)
        sk = fresh_skein(extra=["--dir", d])
        assert snapshot(sk) == want
        info = client(sk).info("persistence")
        assert info["rdb_last_load_keys_loaded"] == len(want)
        log = open(os.path.join(sk.dir, "server.log")).read()
        assert "Loading RDB produced by version 7.0.15" in log
        assert "Done loading RDB, keys loaded: %d, keys expired: 0." % len(want) in log
        assert "DB loaded from disk:" in log
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("opts", [[], ["--rdbcompression", "no"], ["--rdbchecksum", "no"]])
def test_skein_file_loads_into_redis(fresh_redis, fresh_skein, opts):
    sk = fresh_skein(extra=opts)
    populate(client(sk))
    want = snapshot(sk)
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        save_and_copy(sk, d)
        check = subprocess.run([CHECK_RDB, os.path.join(d, "dump.rdb")],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "RDB looks OK" in check.stdout
        red = fresh_redis(extra=["--dir", d])
        assert snapshot(red) == want
        # And back: Redis's save of it loads into Skein unchanged.
        d2 = tempfile.mkdtemp(prefix="skein-rdb-")
        try:
            save_and_copy(red, d2)
            assert snapshot(fresh_skein(extra=["--dir", d2])) == want
        finally:
            shutil.rmtree(d2, ignore_errors=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_expired_keys_are_dropped_on_load(fresh_skein):
    sk = fresh_skein()
    r = client(sk)
    r.set("short", "v", px=200)
    r.set("long", "v", ex=1000)
    assert r.save()
    time.sleep(0.3)
    assert r.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert r.keys() == [b"long"]
    info = r.info("persistence")
    assert info["rdb_last_load_keys_expired"] == 1
    assert info["rdb_last_load_keys_loaded"] == 1


def start_on(kind, d, extra=()):
    """A server on an existing dir (so a file can be put there first)."""
    port = free_port()
    if kind == "redis":
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", d]
    else:
        cmd = [SKEIN_BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--dir", d, "--workers", "2"]
    log = open(os.path.join(d, kind + ".log"), "w")
    proc = subprocess.Popen(cmd + list(extra), stdout=log, stderr=subprocess.STDOUT)
    return proc, port


def refused(kind, d):
    """Start on `d`, expect an exit with status 1; the log."""
    proc, _ = start_on(kind, d)
    try:
        assert proc.wait(timeout=30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return open(os.path.join(d, kind + ".log")).read()


def damaged_files(fresh_skein):
    sk = fresh_skein()
    populate(client(sk))
    assert client(sk).save()
    good = open(os.path.join(sk.dir, "dump.rdb"), "rb").read()
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    return {
        # Cut inside a plain string value (EOF while reading it): a cut at a position that
        # depends on the keys' order could land in a listpack or LZF blob, which Redis
        # reports with other words.
        "truncated": (good[: good.index(b"hello") + 2],
                      "Short read or OOM loading DB. Unrecoverable error, aborting now."),
        "checksum": (bytes(bad_crc), "Wrong RDB checksum expected: ("),
        "signature": (b"XEDIS" + good[5:], "Wrong signature trying to load DB from file"),
    }


@pytest.mark.parametrize("kind", ["truncated", "checksum", "signature"])
def test_damaged_file_is_refused_like_redis(fresh_skein, kind):
    data, message = damaged_files(fresh_skein)[kind]
    for server in ("redis", "skein"):
        d = tempfile.mkdtemp(prefix="skein-rdb-")
        try:
            with open(os.path.join(d, "dump.rdb"), "wb") as f:
                f.write(data)
            log = refused(server, d)
            assert message in log, (server, log)
        finally:
            shutil.rmtree(d, ignore_errors=True)


def test_save_lastsave_info_and_reload(fresh_skein):
    sk = fresh_skein(extra=["--save", "3600 1"])
    r = client(sk)
    populate(r)
    want = snapshot(sk)
    info = r.info("persistence")
    assert info["rdb_changes_since_last_save"] > 0
    before = r.lastsave()
    time.sleep(1.1)
    assert r.save()
    assert r.lastsave() > before
    info = r.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_saves"] == 1
    r.set("after", "1")
    assert r.info("persistence")["rdb_changes_since_last_save"] == 1
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert snapshot(sk) == {**want, (0, b"after"): ("string", b"int", -1, b"1")}
    with pytest.raises(redis.ResponseError, match="only supports the MERGE"):
        r.execute_command("DEBUG", "RELOAD", "BOGUS")


def test_shutdown_save_nosave_and_sigterm():
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    path = os.path.join(d, "dump.rdb")
    try:
        # No save rules: SHUTDOWN does not save, SHUTDOWN SAVE does.
        proc, port = start_on("skein", d)
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        r.set("k", "v1")
        r.shutdown(nosave=True)
        proc.wait(timeout=10)
        assert not os.path.exists(path)
        proc, port = start_on("skein", d)
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        r.set("k", "v2")
        r.shutdown(save=True)
        assert proc.wait(timeout=10) == 0
        assert os.path.exists(path)
        # With save rules, SIGTERM saves; the file is loaded at the next start.
        proc, port = start_on("skein", d, ["--save", "3600 1"])
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        assert r.get("k") == b"v2"
        r.set("k", "v3")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        log = open(os.path.join(d, "skein.log")).read()
        assert "Received SIGTERM scheduling shutdown..." in log
        assert "Saving the final RDB snapshot before exiting." in log
        proc, port = start_on("skein", d)
        wait_port(port, proc)
        wait_loaded(port)
        assert redis.Redis(port=port).get("k") == b"v3"
        proc.terminate()
        proc.wait(timeout=10)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def misconf_replies(server):
    """Make the dir vanish, fail a BGSAVE, and collect the replies that follow."""
    r = client(server)
    gone = tempfile.mkdtemp(prefix="skein-gone-")
    r.config_set("dir", gone)
    os.rmdir(gone)
    replies = []
    for cmd in (["SAVE"], ["BGSAVE"]):
        try:
            replies.append(r.execute_command(*cmd))
        except redis.ResponseError as e:
            replies.append(str(e))
    deadline = time.time() + 10
    while r.info("persistence")["rdb_bgsave_in_progress"] and time.time() < deadline:
        time.sleep(0.05)
    info = r.info("persistence")
    replies.append(info["rdb_last_bgsave_status"])
    for cmd in (["SET", "a", "1"], ["PING"], ["GET", "a"], ["DEL", "a"]):
        try:
            replies.append(r.execute_command(*cmd))
        except redis.ResponseError as e:
            replies.append(str(e))
    r.config_set("stop-writes-on-bgsave-error", "no")
    replies.append(r.execute_command("SET", "a", "1"))
    return replies


def test_unwritable_dir_and_misconf_like_redis(fresh_redis, fresh_skein):
    extra = ["--save", "3600 1", "--enable-protected-configs", "yes"]
    red = fresh_redis(extra=extra)
    sk = fresh_skein(extra=extra)
    want = misconf_replies(red)
    assert want[3].startswith("MISCONF")
    assert misconf_replies(sk) == want
    log = open(os.path.join(sk.dir, "server.log")).read()
    assert "Failed opening the temp RDB file temp-" in log
    assert client(sk).ping()


def test_save_rules_run_a_bgsave(fresh_skein):
    sk = fresh_skein()
    r = client(sk)
    r.config_set("save", "1 2")
    r.set("a", 1)
    r.set("b", 2)
    deadline = time.time() + 10
    while r.info("persistence")["rdb_changes_since_last_save"] and time.time() < deadline:
        time.sleep(0.1)
    info = r.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0
    assert info["rdb_last_bgsave_status"] == "ok"
    log = open(os.path.join(sk.dir, "server.log")).read()
    assert "2 changes in 1 seconds. Saving..." in log
    assert "Background saving terminated with success" in log
    assert os.path.exists(os.path.join(sk.dir, "dump.rdb"))


def test_bgsave_is_one_point_in_time(fresh_skein):
    """Writers change keys in known patterns while BGSAVE runs; the file must be one
    consistent cut: a prefix of one writer's sequential rounds, and never half of a
    MULTI/EXEC that spans shards."""
    import threading
    # The saver thread sleeps 20 us per key it writes out (about 1.2 s in all), so the
    # writers run during the save.
    sk = fresh_skein(workers=4, extra=["--rdb-key-save-delay", "20"])
    r = client(sk)
    nkeys = 2000
    p = r.pipeline(transaction=False)
    for i in range(0, 60_000):
        p.set(f"ballast:{i}", "x" * 64)
        if i % 5000 == 4999:
            p.execute()
    for i in range(nkeys):
        p.set(f"seq:{i}", 0)
    p.mset({"pair:a": 0, "pair:b": 0, "pair:c": 0})
    p.execute()
    stop = threading.Event()
    rounds = [0]

    def sequential(w, rnd):
        pipe = w.pipeline(transaction=False)
        for i in range(nkeys):
            pipe.set(f"seq:{i}", rnd)
            if i % 200 == 199:
                pipe.execute()
        rounds[0] = rnd

    def transaction(w, n):
        w.pipeline(transaction=True).set("pair:a", n).set("pair:b", n).set("pair:c", n).execute()

    def writer(step):
        def run():
            w, n = client(sk), 0
            while not stop.is_set():
                n += 1
                step(w, n)
        return threading.Thread(target=run)

    threads = [writer(sequential), writer(transaction)]
    for t in threads:
        t.start()
    try:
        while rounds[0] < 2:
            time.sleep(0.01)
        assert r.bgsave()
        with pytest.raises(redis.ResponseError, match="Background save already in progress"):
            r.bgsave()
        deadline = time.time() + 120
        while r.info("persistence")["rdb_bgsave_in_progress"] and time.time() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
    info = r.info("persistence")
    assert info["rdb_bgsave_in_progress"] == 0
    assert info["rdb_last_bgsave_status"] == "ok"
    # Writers wrote keys out before modifying them.
    assert info["skein_rdb_last_cow_writes"] > 0
    path = os.path.join(sk.dir, "dump.rdb")
    check = subprocess.run([CHECK_RDB, path], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        shutil.copy(path, os.path.join(d, "dump.rdb"))
        loaded = fresh_skein(extra=["--dir", d])
        wait_loaded(loaded.port)
        lr = client(loaded)
        vals = [int(v) for v in lr.mget([f"seq:{i}" for i in range(nkeys)])]
        # One cut of a sequential writer: round r up to some key, round r-1 after it.
        top = vals[0]
        assert all(v in (top, top - 1) for v in vals), vals
        assert vals == sorted(vals, reverse=True), vals
        a, b, c = lr.mget(["pair:a", "pair:b", "pair:c"])
        assert a == b == c
        assert lr.dbsize() == 60_000 + nkeys + 3
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_clients_get_loading_until_the_file_is_in(fresh_redis, fresh_skein):
    """While a file loads (slowed by key-load-delay), commands answer -LOADING, INFO
    answers with loading:1, and no reply ever shows part of the dataset."""
    red = fresh_redis()
    rr = client(red)
    rr.execute_command("DEBUG", "POPULATE", 20_000)
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        save_and_copy(red, d)
        proc, port = start_on("skein", d, ["--key-load-delay", "100"])
        try:
            wait_port(port, proc)
            r = redis.Redis(port=port)
            seen_loading = False
            while True:
                try:
                    n = r.dbsize()
                    break
                except redis.BusyLoadingError:
                    seen_loading = True
                    try:
                        got = r.get("key:1")
                        # The load ended between the two commands (a busy machine can
                        # stall the client there): then it is whole.
                        assert got == b"value:1"
                        assert r.info("persistence")["loading"] == 0
                        assert r.dbsize() == 20_000
                    except redis.BusyLoadingError:
                        pass
                    info = r.info("persistence")
                    assert info["loading"] in (0, 1)
                    time.sleep(0.05)
            assert seen_loading
            assert n == 20_000
            assert r.get("key:19999") == b"value:19999"
            assert r.info("persistence")["loading"] == 0
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bgsave_survives_flushdb_swapdb_and_expiry(fresh_skein):
    """FLUSHDB, SWAPDB, DEL and expiry during a BGSAVE leave the file as the dataset was
    when BGSAVE started."""
    sk = fresh_skein(extra=["--rdb-key-save-delay", "200"])
    r0, r1 = client(sk, 0), client(sk, 1)
    for r, tag in ((r0, "zero"), (r1, "one")):
        p = r.pipeline(transaction=False)
        for i in range(3000):
            p.set(f"{tag}:{i}", i)
        p.execute()
    r0.set("soon", "gone", px=300)
    want = snapshot(sk)
    assert r0.bgsave()
    r0.swapdb(0, 1)
    r0.flushdb()
    r1.delete("zero:1")
    r1.set("zero:2", "changed")
    time.sleep(0.4)  # "soon" expires while the save runs
    r1.get("soon")
    deadline = time.time() + 120
    while r0.info("persistence")["rdb_bgsave_in_progress"] and time.time() < deadline:
        time.sleep(0.05)
    assert r0.info("persistence")["rdb_last_bgsave_status"] == "ok"
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        shutil.copy(os.path.join(sk.dir, "dump.rdb"), os.path.join(d, "dump.rdb"))
        got = snapshot(fresh_skein(extra=["--dir", d]))
        want.pop((0, b"soon"), None)  # expired by the time it is loaded
        assert got == want
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("policy", ["allkeys-lfu", "allkeys-lru"])
def test_access_fields_travel_with_the_file(fresh_redis, fresh_skein, policy):
    """Under an LFU policy files carry each key's counter (FREQ), under an LRU one its idle
    time (IDLE), both ways between Redis and Skein. (No LFU decay: a minute boundary
    passing between two reads would take one from the counters read after it.)"""
    extra = ["--maxmemory-policy", policy, "--lfu-log-factor", "0", "--lfu-decay-time", "0"]
    red = fresh_redis(extra=extra)
    rr = client(red)
    for i in range(20):
        rr.set(f"k{i}", i)
        if policy.endswith("lfu"):
            for _ in range(i):
                rr.get(f"k{i}")
        else:
            payload = rr.dump(f"k{i}")
            rr.restore(f"k{i}", 0, payload, replace=True, idletime=1000 * i)

    def fields(r):
        what = "freq" if policy.endswith("lfu") else "idletime"
        return [r.object(what, f"k{i}") for i in range(20)]

    want = fields(rr)
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    d2 = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        save_and_copy(red, d)
        sk = fresh_skein(extra=extra + ["--dir", d])
        wait_loaded(sk.port)
        got = fields(client(sk))
        back = fields(client(fresh_redis(extra=extra + ["--dir", d])))
        save_and_copy(sk, d2)
        red2 = fresh_redis(extra=extra + ["--dir", d2])
        again = fields(client(red2))
        if policy.endswith("lfu"):
            assert got == back == again
        else:
            for a, b, c in zip(back, got, again):
                assert abs(a - b) <= 2 and abs(a - c) <= 2, (back, got, again)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(d2, ignore_errors=True)


def test_shutdown_during_bgsave_saves_and_cleans_up():
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        proc, port = start_on("skein", d, ["--rdb-key-save-delay", "1000"])
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        r.mset({f"k{i}": i for i in range(5000)})
        assert r.bgsave()
        r.set("last", "write")
        r.shutdown(save=True)
        assert proc.wait(timeout=30) == 0
        assert sorted(os.listdir(d)) == ["dump.rdb", "skein.log"]
        log = open(os.path.join(d, "skein.log")).read()
        assert "There is a child saving an .rdb. Killing it!" in log
        proc, port = start_on("skein", d)
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        assert r.dbsize() == 5001 and r.get("last") == b"write"
        proc.terminate()
        proc.wait(timeout=10)
    finally:
        shutil.rmtree(d, ignore_errors=True)
