"""Bounded run of the command-level differential fuzzer (tests/cmd_fuzz.py): fixed seeds,
a few thousand generated commands over every command Skein serves (4% of the steps of
the multi-connection kinds of cmd_fuzz_modes), RESP2 and RESP3,
replies compared with redis-server 7.0.15; fails on any divergence, a server that stops
answering, or an "internal error" (a caught handler panic) in Skein's log."""
import os

import pytest

import cmd_fuzz

SPECS = cmd_fuzz.load_specs()
FOUND_STEPS = os.path.join(os.path.dirname(__file__), "cmd_fuzz_found_steps.jsonl")


@pytest.mark.parametrize("seed,proto", [(1, 2), (2, 3), (3, 2), (4, 3)])
def test_cmd_fuzz(seed, proto, fresh_redis, fresh_skein):
    ref, sk = fresh_redis(), fresh_skein()
    failures = cmd_fuzz.run_seed(seed, 2300, ref.port, sk.port, SPECS, proto, modes=0.04)
    assert sk.alive() and ref.alive()
    sk.log.flush()
    errors = cmd_fuzz.internal_errors(os.path.join(sk.dir, "server.log"))
    assert not failures and not errors, "\n".join(failures[:20] + errors[:20])


@pytest.mark.parametrize("proto", [2, 3])
def test_cmd_fuzz_found_steps(proto, fresh_redis, fresh_skein):
    """The multi-connection steps the fuzzer found divergences with, replayed."""
    ref, sk = fresh_redis(), fresh_skein()
    failures = cmd_fuzz.replay(FOUND_STEPS, ref.port, sk.port, proto)
    assert not failures, "\n".join(failures[:20])
