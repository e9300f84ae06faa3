"""The DUMP payload fuzzer (tests/dump_fuzz.py) on one fixed seed, and the payloads it
found (tests/dump_fuzz_found.txt) replayed: damaged collection payloads under a valid
checksum are refused by Skein exactly where a redis-server 7.0.15 with
sanitize-dump-payload yes refuses them (same error), and what both accept reads, writes,
dumps and reloads the same. Longer runs: `python3 tests/dump_fuzz.py --seed S --seeds N
--count C`."""
import os

import pytest

import dump_fuzz
from conftest import ServerProc
from resp_client import RawConn

FOUND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dump_fuzz_found.txt")


@pytest.fixture(scope="module")
def fuzzer():
    """A sanitizing Redis and a Skein of its own (DEBUG RELOAD reloads its keyspace)."""
    ref = ServerProc("redis", extra=dump_fuzz.SANITIZE)
    sk = ServerProc("skein", workers=2)
    fz = None
    try:
        src = RawConn(ref.port)
        bodies = dump_fuzz.corpus(src)
        src.close()
        fz = dump_fuzz.Fuzzer(ref.port, sk.port, sk_log=os.path.join(sk.dir, "server.log"))
        yield fz, bodies, sk
    finally:
        if fz:
            fz.close()
        ref.stop()
        sk.stop()


def log_problems(sk):
    sk.log.flush()
    return dump_fuzz.log_problems(os.path.join(sk.dir, "server.log"))


def found_payloads():
    """(body, RESTORE options, note) of each line: hex body, options after it, # note."""
    out = []
    with open(FOUND) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            text, _, note = line.partition("#")
            words = text.split()
            out.append((bytes.fromhex(words[0]), tuple(words[1:]), note.strip()))
    return out


def test_found_payloads(fuzzer):
    fz, _, sk = fuzzer
    for body, options, note in found_payloads():
        why = fz.check(body, options)
        assert why is None, "%s: %s" % (note, why)
    assert sk.alive()
    assert log_problems(sk) == []


def test_fixed_seed(fuzzer):
    fz, bodies, sk = fuzzer
    before = dict(fz.stats)
    failures = dump_fuzz.run_seed(fz, 7, 600, bodies, dump_fuzz.blob_pool(bodies))
    assert not failures, "\n".join(dump_fuzz.describe(f) for f in failures[:10])
    # Both outcomes are exercised: refusals compared, acceptances read and reloaded.
    assert fz.stats["refused"] - before["refused"] > 150
    assert fz.stats["accepted"] - before["accepted"] > 150
    assert sk.alive()
    assert log_problems(sk) == []
