"""The append-only file against redis-server 7.0.15: Skein's AOF directory (manifest, RDB
base, incremental files written from the propagation stream) is accepted by
redis-check-aof and loads into Redis with exactly Skein's dataset, also after concurrent
conflicting writes from several workers and rewrites; Redis's AOF directories (RDB or
command base) load into Skein; truncated and corrupt files are treated as Redis treats them,
with its log lines; CONFIG SET appendonly; and a crash test: SIGKILL at random moments,
with `appendfsync always` and `everysec`, loses no acknowledged write and invents none."""
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from conftest import free_port, wait_port, SKEIN_BIN
from test_persistence import client, populate, snapshot, wait_loaded

CHECK_AOF = shutil.which("redis-check-aof") or "redis-check-aof"
MANIFEST = "appendonly.aof.manifest"


def start(kind, d, extra=(), log_name=None):
    """A server with `appendonly yes` on dir `d`; returns (proc, port)."""
    port = free_port()
    if kind == "redis":
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--dir", d, "--appendonly", "yes"]
    else:
        cmd = [SKEIN_BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--dir", d, "--appendonly", "yes", "--workers", "2"]
    log = open(os.path.join(d, log_name or kind + ".log"), "a")
    proc = subprocess.Popen(cmd + list(extra), stdout=log, stderr=subprocess.STDOUT)
    return proc, port


class Server:
    def __init__(self, kind, d, extra=()):
        self.kind, self.dir = kind, d
        self.proc, self.port = start(kind, d, extra)
        wait_port(self.port, self.proc)
        wait_loaded(self.port)

    def stop(self, nosave=True):
        if self.proc.poll() is None:
            try:
                redis.Redis(port=self.port).shutdown(nosave=nosave)
            except redis.ConnectionError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        return open(os.path.join(self.dir, self.kind + ".log")).read()


@pytest.fixture
def tmpdirs():
    made = []

    def make():
        d = tempfile.mkdtemp(prefix="skein-aof-")
        made.append(d)
        return d

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def wait_rewrite(r):
    deadline = time.time() + 30
    while True:
        info = r.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return info
        assert time.time() < deadline
        time.sleep(0.05)


def check_aof(d):
    out = subprocess.run([CHECK_AOF, os.path.join(d, "appendonlydir", MANIFEST)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "All AOF files and manifest are valid" in out.stdout
    return out.stdout


def copy_aof(src, dst):
    shutil.copytree(os.path.join(src, "appendonlydir"), os.path.join(dst, "appendonlydir"))


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_skein_dir_is_redis_layout_and_loads_into_redis(tmpdirs, preamble):
    d = tmpdirs()
    base = "appendonly.aof.2.base." + ("rdb" if preamble == "yes" else "aof")
    sk = Server("skein", d, ["--aof-use-rdb-preamble", preamble])
    try:
        r = client(sk)
        populate(r)
        assert r.bgrewriteaof() in (True, b"Background append only file rewriting started")
        info = wait_rewrite(r)
        assert info["aof_rewrites"] == 1 and info["aof_last_bgrewrite_status"] == "ok"
        r.set("after_rewrite", "x")
        r.incr("int")
        redis.Redis(port=sk.port, db=5).rpush("l5", "a", "b")
        want = snapshot(sk)
        info = r.info("persistence")
        assert info["aof_enabled"] == 1
        assert info["aof_current_size"] > info["aof_base_size"] > 0
    finally:
        sk.stop()
    names = sorted(os.listdir(os.path.join(d, "appendonlydir")))
    assert names == sorted([base, "appendonly.aof.2.incr.aof", MANIFEST])
    assert open(os.path.join(d, "appendonlydir", MANIFEST)).read() == (
        "file %s seq 2 type b\n"
        "file appendonly.aof.2.incr.aof seq 2 type i\n" % base)
    head = open(os.path.join(d, "appendonlydir", base), "rb").read(5)
    assert head == (b"REDIS" if preamble == "yes" else b"*2\r\n$")
    incr = open(os.path.join(d, "appendonlydir", "appendonly.aof.2.incr.aof"), "rb").read()
    assert incr.startswith(b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$13\r\nafter_rewrite")
    check_aof(d)
    d2 = tmpdirs()
    copy_aof(d, d2)
    red = Server("redis", d2)
    try:
        assert snapshot(red) == want
    finally:
        red.stop()
    # And Skein itself loads it back.
    sk = Server("skein", d, ["--aof-use-rdb-preamble", preamble])
    try:
        assert snapshot(sk) == want
        assert "DB loaded from append only file:" in sk.log()
    finally:
        sk.stop()


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_redis_dir_loads_into_skein(tmpdirs, preamble):
    d = tmpdirs()
    red = Server("redis", d, ["--aof-use-rdb-preamble", preamble])
    try:
        r = client(red)
        populate(r)
        r.bgrewriteaof()
        wait_rewrite(r)
        r.set("after_rewrite", "x")
        r.lpush("list_small", "new")
        r.execute_command("MULTI")
        r.execute_command("INCR", "int")
        r.execute_command("SADD", "set_strs", "d")
        r.execute_command("EXEC")
        want = snapshot(red)
    finally:
        red.stop()
    d2 = tmpdirs()
    copy_aof(d, d2)
    sk = Server("skein", d2)
    try:
        assert snapshot(sk) == want
        log = sk.log()
        assert "DB loaded from base file appendonly.aof.2.base." in log
        assert "DB loaded from incr file appendonly.aof.2.incr.aof" in log
    finally:
        sk.stop()


def hammer(port, stop, seed, errors):
    """Conflicting writes on a few keys: ordered (APPEND, RPUSH) and not, transactions,
    a script, expiries."""
    rnd = random.Random(seed)
    r = redis.Redis(port=port, socket_timeout=30)
    n = 0
    try:
        while not stop.is_set():
            k = rnd.randrange(4)
            op = rnd.randrange(8)
            n += 1
            tag = "%d.%d;" % (seed, n)
            if op == 0:
                r.append("s%d" % k, tag)
            elif op == 1:
                r.rpush("l%d" % k, tag)
            elif op == 2:
                r.incrbyfloat("f%d" % k, 0.5)
            elif op == 3:
                p = r.pipeline(transaction=True)
                p.append("s%d" % k, tag)
                p.rpush("l%d" % ((k + 1) % 4), tag)
                p.zadd("z", {tag: n})
                p.execute()
            elif op == 4:
                r.eval("redis.call('append', KEYS[1], ARGV[1]); "
                       "return redis.call('rpush', KEYS[2], ARGV[1])",
                       2, "s%d" % k, "l%d" % k, tag)
            elif op == 5:
                r.set("t%d" % k, tag, px=rnd.choice([1, 5, 100000]))
            elif op == 6:
                r.spop("set") if rnd.random() < 0.3 else r.sadd("set", tag)
            else:
                r.hincrby("h", "f%d" % k, 1)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def test_concurrent_writes_load_into_redis_exactly(tmpdirs):
    d = tmpdirs()
    sk = Server("skein", d, ["--appendfsync", "always"])
    try:
        stop, errors = threading.Event(), []
        threads = [threading.Thread(target=hammer, args=(sk.port, stop, i, errors))
                   for i in range(6)]
        for t in threads:
            t.start()
        r = client(sk)
        time.sleep(0.7)
        r.bgrewriteaof()
        time.sleep(0.7)
        stop.set()
        for t in threads:
            t.join()
        assert not errors, errors
        wait_rewrite(r)
        time.sleep(0.2)  # let the short TTLs expire (their DELs are in the AOF too)
        want = snapshot(sk)
        info = r.info("persistence")
        assert info["skein_aof_fsyncs"] > 0
    finally:
        sk.stop()
    check_aof(d)
    d2 = tmpdirs()
    copy_aof(d, d2)
    red = Server("redis", d2)
    try:
        got = snapshot(red)
        # Keys with a 1-5 ms TTL may have expired in one server and not yet in the other;
        # INCRBYFLOAT's result is a string Redis itself reloads (SET KEEPTTL) as an int.
        def comparable(m):
            return {k: (t, ttl, v) for k, (t, _enc, ttl, v) in m.items()
                    if not k[1].startswith(b"t")}
        assert comparable(got) == comparable(want)
    finally:
        red.stop()


def incr_path(d, name="appendonly.aof.1.incr.aof"):
    return os.path.join(d, "appendonlydir", name)


def written_dir(tmpdirs, commands):
    d = tmpdirs()
    sk = Server("skein", d)
    try:
        r = client(sk)
        for c in commands:
            r.execute_command(*c)
    finally:
        sk.stop()
    return d


def load_log(kind, d, extra=()):
    """Start on `d` and return (exit status or None if it kept running, log)."""
    proc, port = start(kind, d, extra)
    try:
        wait_port(port, proc)
        wait_loaded(port)
    except (RuntimeError, redis.ConnectionError):
        return proc.wait(timeout=10), open(os.path.join(d, kind + ".log")).read()
    redis.Redis(port=port).shutdown(nosave=True)
    proc.wait(timeout=10)
    return None, open(os.path.join(d, kind + ".log")).read()


def both(tmpdirs, src, extra=()):
    out = {}
    for kind in ("redis", "skein"):
        d = tmpdirs()
        copy_aof(src, d)
        code, log = load_log(kind, d, extra)
        out[kind] = (code, log, open(incr_path(d), "rb").read())
    return out


def test_truncated_aof_like_redis(tmpdirs):
    src = written_dir(tmpdirs, [["SET", "a", "1"], ["SET", "b", "2"], ["MULTI"], ["INCR", "n"],
                                ["SET", "c", "3"], ["EXEC"]])
    data = open(incr_path(src), "rb").read()
    # Cut inside the last command of the transaction, then after its MULTI only.
    for cut in (len(data) - 5, data.index(b"*1\r\n$5\r\nMULTI") + 15):
        with open(incr_path(src), "wb") as f:
            f.write(data[:cut])
        res = both(tmpdirs, src)
        for kind, (code, log, after) in res.items():
            assert code is None, (kind, log)
            assert "!!! Warning: short read while loading the AOF file appendonly.aof.1.incr.aof!!!" in log
            assert "AOF appendonly.aof.1.incr.aof loaded anyway because aof-load-truncated is enabled" in log
        assert res["skein"][2] == res["redis"][2]
        trunc = [line for line in res["redis"][1].splitlines() if "Truncating the AOF" in line]
        assert trunc and trunc[0].split("# ", 1)[1] in res["skein"][1]
        res = both(tmpdirs, src, ["--aof-load-truncated", "no"])
        for kind, (code, log, _) in res.items():
            assert code == 1, (kind, log)
            assert "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof. You can: 1) Make a backup" in log


@pytest.mark.parametrize("damage,message", [
    (lambda d: d + b"garbage\r\n", "Bad file format reading the append only file appendonly.aof.1.incr.aof: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"),
    (lambda d: d + b"*1\r\n$7\r\nNOSUCHC\r\n", "Unknown command 'NOSUCHC' reading the append only file appendonly.aof.1.incr.aof"),
])
def test_corrupt_aof_refused_like_redis(tmpdirs, damage, message):
    src = written_dir(tmpdirs, [["SET", "a", "1"]])
    data = open(incr_path(src), "rb").read()
    with open(incr_path(src), "wb") as f:
        f.write(damage(data))
    for kind, (code, log, _) in both(tmpdirs, src).items():
        assert code == 1, (kind, log)
        assert message in log, (kind, log)


def test_bad_manifest_refused_like_redis(tmpdirs):
    src = written_dir(tmpdirs, [["SET", "a", "1"]])
    with open(os.path.join(src, "appendonlydir", MANIFEST), "a") as f:
        f.write("file appendonly.aof.0.incr.aof seq 1 type i\n")
    for kind, (code, log, _) in both(tmpdirs, src).items():
        assert code == 1, (kind, log)
        assert "*** FATAL AOF MANIFEST FILE ERROR ***" in log
        assert "Reading the manifest file, at line 3" in log
        assert "Found a non-monotonic sequence number" in log


def test_timestamps_and_config_set_appendonly(tmpdirs):
    d = tmpdirs()
    proc, port = start("skein", d, ["--appendonly", "no"])
    try:
        wait_port(port, proc)
        r = redis.Redis(port=port)
        r.mset({"x": 1, "y": 2})
        assert r.config_set("aof-timestamp-enabled", "yes")
        assert r.config_set("appendonly", "yes")
        r.set("z", 3)
        wait_rewrite(r)
        assert r.info("persistence")["aof_enabled"] == 1
        time.sleep(1.1)
        r.incr("x")
        want = snapshot(type("S", (), {"port": port})())
        r.shutdown(nosave=True)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    incr = open(incr_path(d), "rb").read()
    assert b"#TS:" in incr
    check_aof(d)
    for kind in ("redis", "skein"):
        d2 = tmpdirs()
        copy_aof(d, d2)
        s = Server(kind, d2)
        try:
            assert snapshot(s) == want
        finally:
            s.stop()
    # Turning it off stops appending (the files stay).
    s = Server("skein", d)
    try:
        r = client(s)
        assert r.config_set("appendonly", "no")
        r.set("late", 1)
        assert r.info("persistence")["aof_enabled"] == 0
    finally:
        s.stop()
    assert b"late" not in open(incr_path(d), "rb").read()


def test_info_persistence_fields_match_redis(tmpdirs):
    keys = {}
    for kind in ("redis", "skein"):
        s = Server(kind, tmpdirs())
        try:
            keys[kind] = [k for k in client(s).info("persistence") if not k.startswith("skein_")]
        finally:
            s.stop()
    assert keys["skein"] == keys["redis"]


def writer(port, idx, acked, sent, stop):
    """RPUSH 0, 1, 2... to its own list; remembers what was sent and acknowledged."""
    r = redis.Redis(port=port, socket_timeout=10)
    i = acked[idx] + 1
    while not stop.is_set():
        sent[idx] = i
        try:
            r.rpush("crash:%d" % idx, i)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return
        acked[idx] = i
        i += 1


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_sigkill_loses_no_acknowledged_write(tmpdirs, fsync):
    """`always`: every acknowledged write is on disk. `everysec`: written (not fsynced)
    before its reply, so a process crash loses nothing either (an OS crash may lose the
    last second or two)."""
    d = tmpdirs()
    rnd = random.Random(fsync)
    n = 4
    acked, sent = [-1] * n, [-1] * n
    for round_ in range(3):
        proc, port = start("skein", d, ["--appendfsync", fsync])
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        for i in range(n):
            got = [int(x) for x in r.lrange("crash:%d" % i, 0, -1)]
            # Nothing lost, nothing invented, in order.
            assert got == list(range(len(got))), (round_, i)
            assert acked[i] <= len(got) - 1 <= sent[i], (round_, i, acked[i], sent[i], len(got))
            acked[i] = len(got) - 1
        stop = threading.Event()
        threads = [threading.Thread(target=writer, args=(port, i, acked, sent, stop))
                   for i in range(n)]
        for t in threads:
            t.start()
        if round_ == 1:
            time.sleep(0.2)
            r.bgrewriteaof()
        time.sleep(rnd.uniform(0.3, 0.9))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join()
    proc, port = start("skein", d)
    try:
        wait_port(port, proc)
        wait_loaded(port)
        r = redis.Redis(port=port)
        for i in range(n):
            got = [int(x) for x in r.lrange("crash:%d" % i, 0, -1)]
            assert got == list(range(len(got)))
            assert acked[i] <= len(got) - 1 <= sent[i]
        assert sum(acked) > 0
    finally:
        proc.kill()
        proc.wait()


def test_old_style_file_with_preamble_is_migrated_like_redis(tmpdirs):
    """An `appendonly.aof` of Redis < 7 (RDB preamble and a command tail) in `dir` moves
    into the AOF directory as its base, in Redis and in Skein alike."""
    src = tmpdirs()
    sk = Server("skein", src)
    try:
        r = client(sk)
        r.rpush("l", 1, 2, 3)
        r.bgrewriteaof()
        wait_rewrite(r)
        r.set("tail", "t")
        r.incr("n")
        want = snapshot(sk)
    finally:
        sk.stop()
    aof = os.path.join(src, "appendonlydir")
    data = (open(os.path.join(aof, "appendonly.aof.2.base.rdb"), "rb").read()
            + open(os.path.join(aof, "appendonly.aof.2.incr.aof"), "rb").read())
    for kind in ("redis", "skein"):
        d = tmpdirs()
        with open(os.path.join(d, "appendonly.aof"), "wb") as f:
            f.write(data)
        s = Server(kind, d)
        try:
            assert snapshot(s) == want
            log = s.log()
            for line in ("Successfully migrated an old-style AOF file (appendonly.aof) into the AOF directory (appendonlydir).",
                         "Reading RDB preamble from AOF file...",
                         "Reading the remaining AOF tail..."):
                assert line in log, (kind, line)
        finally:
            s.stop()
        assert open(os.path.join(d, "appendonlydir", MANIFEST)).read() == (
            "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n")


@pytest.fixture
def small_disks():
    """Directories on 2 MB tmpfs mounts (a disk that fills up); skipped where mounting is
    not allowed. Unmounted when the test ends."""
    made = []

    def make():
        d = tempfile.mkdtemp(prefix="skein-full-")
        made.append(d)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", d],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())
        # Room the test gives back once the disk is full.
        with open(os.path.join(d, "ballast"), "wb") as f:
            f.write(b"\0" * 600_000)
        return d

    yield make
    for d in made:
        subprocess.run(["umount", "-l", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def fill_disk(port, d, fsync):
    """SETs of 100 KB until one is refused; then the ballast is removed. Returns what the
    clients saw: (acked indices, refusal, after-recovery replies)."""
    c = redis.Redis(port=port)

    def attempt(f):
        try:
            return f()
        except redis.ResponseError as e:
            return "error: " + str(e)
        except redis.ConnectionError:
            return "connection lost"

    acked, refusal = [], None
    for i in range(60):
        r = attempt(lambda: c.set("k%d" % i, b"x" * 100_000))
        if r is not True:
            refusal = (i, r)
            break
        acked.append(i)
    assert refusal is not None, "the disk never filled"
    seen = {"ping": attempt(c.ping), "get": attempt(lambda: c.get("k0") is not None)}
    os.remove(os.path.join(d, "ballast"))
    if fsync == "everysec":
        # Writes come back once the AOF can be written again (Redis retries each second).
        deadline = time.time() + 10
        while attempt(lambda: c.set("after", "1")) is not True:
            assert time.time() < deadline, "writes never came back"
            time.sleep(0.1)
        seen["status"] = c.info("persistence")["aof_last_write_status"]
    return acked, refusal, seen


@pytest.mark.parametrize("fsync", ["everysec", "always"])
def test_full_disk_like_redis(small_disks, fsync):
    """A full disk under the AOF: with everysec, writes (and PING) get Redis's -MISCONF,
    reads are served, and writes come back once there is room; with always, the server
    exits as Redis does. Either way every acknowledged write is there after a restart."""
    outcomes = {}
    for kind in ("redis", "skein"):
        d = small_disks()
        s = Server(kind, d, extra=["--appendfsync", fsync])
        acked, (refused_at, refusal), seen = fill_disk(s.port, d, fsync)
        if fsync == "always":
            assert s.proc.wait(timeout=10) == 1
        s.stop()
        s = Server(kind, d)
        r = redis.Redis(port=s.port)
        present = [i for i in range(60) if r.exists("k%d" % i)]
        s.stop()
        assert present == acked, (kind, present, acked)
        outcomes[kind] = (refusal, seen)
    assert outcomes["skein"] == outcomes["redis"]
    refusal, seen = outcomes["redis"]
    if fsync == "everysec":
        assert refusal.startswith("error: MISCONF Errors writing to the AOF file")
        assert seen["ping"].startswith("error: MISCONF") and seen["get"] is True
        assert seen["status"] == "ok"
    else:
        assert refusal == "connection lost"
