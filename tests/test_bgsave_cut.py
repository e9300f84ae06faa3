"""A fork-less BGSAVE is one point in time under writes: while the save runs (slowed by
rdb-key-save-delay), writers overwrite, delete, re-create, rename and create keys, change
collections in place and change TTLs, in two databases; the file, loaded into Skein and
into redis-server 7.0.15, holds exactly the dataset as it was when BGSAVE answered."""
import os
import random
import shutil
import tempfile
import time

from test_persistence import client, populate, snapshot


def writes(r, rnd, n):
    """`n` writes of every kind on the keys `populate` and `fill` made, in one pipeline."""
    p = r.pipeline(transaction=False)
    for j in range(n):
        i = rnd.randrange(20_000)
        kind = j % 12
        if kind == 0:
            p.set(f"str:{i}", "overwritten")
        elif kind == 1:
            p.delete(f"str:{i}")
        elif kind == 2:
            p.delete(f"str:{i}")
            p.set(f"str:{i}", "re-created")
        elif kind == 3:
            p.set(f"created:{rnd.randrange(1 << 30)}", "new")
        elif kind == 4:
            p.expire(f"str:{i}", 1000)
            p.persist(f"ttl:{i % 500}")
        elif kind == 5:
            p.rename(f"str:{i}", f"renamed:{i}")
        elif kind == 6:
            p.hset("hash_big", f"field{i % 400}", "changed")
            p.rpush("list_big", "pushed")
            p.lpop("list_small")
        elif kind == 7:
            p.sadd("set_big_ints", 5000 + i)
            p.srem("set_ints", i % 50)
            p.zadd("zset_big", {f"m{i % 400}": -i})
        elif kind == 8:
            p.xadd("stream", {"f": "new"})
            p.xack("stream", "grp", f"{i % 30 + 1}-1")
            p.incr("int")
        elif kind == 9:
            p.execute_command("SELECT", 1)
            p.set(f"one:{i % 2000}", "changed")
            p.delete(f"one:{(i + 7) % 2000}")
            p.execute_command("SELECT", 0)
        elif kind == 10:
            p.append(f"str:{i}", "-appended")
            p.setrange(f"str:{(i + 1) % 20_000}", 0, "X")
        else:
            p.mset({f"str:{i}": "mset", f"created:{i}": "mset"})
            p.getdel(f"str:{(i + 3) % 20_000}")
    p.execute(raise_on_error=False)  # RENAME of a key deleted meanwhile


def fill(r):
    p = r.pipeline(transaction=False)
    for i in range(20_000):
        p.set(f"str:{i}", f"value-{i}")
    for i in range(500):
        p.set(f"ttl:{i}", i, px=3_600_000 + i)
    p.execute_command("SELECT", 1)
    for i in range(2000):
        p.set(f"one:{i}", i)
    p.execute_command("SELECT", 0)
    p.execute()


def test_bgsave_under_writes_holds_the_dataset_at_its_start(fresh_redis, fresh_skein):
    sk = fresh_skein(extra=["--rdb-key-save-delay", "100"])
    r = client(sk)
    populate(r)
    fill(r)
    want = snapshot(sk)
    assert r.bgsave()
    rnd = random.Random(19)
    writes(r, rnd, 600)
    # The first writes ran while the saver was still at work.
    assert r.info("persistence")["rdb_bgsave_in_progress"] == 1
    deadline = time.time() + 120
    while r.info("persistence")["rdb_bgsave_in_progress"] and time.time() < deadline:
        writes(r, rnd, 300)
    info = r.info("persistence")
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["skein_rdb_last_cow_writes"] > 0
    d = tempfile.mkdtemp(prefix="skein-rdb-")
    try:
        shutil.copy(os.path.join(sk.dir, "dump.rdb"), os.path.join(d, "dump.rdb"))
        assert snapshot(fresh_skein(extra=["--dir", d])) == want
        assert snapshot(fresh_redis(extra=["--dir", d])) == want
    finally:
        shutil.rmtree(d, ignore_errors=True)
