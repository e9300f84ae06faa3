"""Scripts while writes are denied by a failed save (`stop-writes-on-bgsave-error yes`),
against redis-server 7.0.15 (the directory on a tmpfs remounted read-only, as in
test_readonly_dir.py): a script declaring flags without `no-writes` is refused with
-MISCONF before it runs, one declaring `no-writes` runs, a script without a shebang runs
and its write commands fail with -MISCONF; FCALL follows its function's flags."""
import os

import pytest

from test_persistence import client
from test_readonly_dir import EXTRA, attempt, bgsave_done, read_only, tmpfs  # noqa: F401

LIB = ("#!lua name=lib\n"
       "redis.register_function('w', function(k, a) return redis.call('set', k[1], 1) end)\n"
       "redis.register_function{function_name='r', callback=function(k, a) "
       "return redis.call('get', k[1]) end, flags={'no-writes'}}")


def scripts_while_denied(server, mnt):
    sub = os.path.join(mnt, server.kind)
    os.mkdir(sub)
    r = client(server)
    r.config_set("dir", sub)
    r.function_load(LIB)
    r.set("k", "v")
    read_only(mnt, True)
    try:
        seen = [attempt(r, "BGSAVE"), bgsave_done(r)]
        for cmd in [
            ("EVAL", "return 1", "0"),
            ("EVAL", "return redis.call('get', KEYS[1])", "1", "k"),
            ("EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"),
            ("EVAL", "return redis.pcall('set', KEYS[1], 'x')", "1", "k"),
            ("EVAL", "#!lua\nreturn 1", "0"),
            ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "k"),
            ("EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"),
            ("FCALL", "w", "1", "k"),
            ("FCALL", "r", "1", "k"),
            ("FCALL_RO", "r", "1", "k"),
        ]:
            seen.append(attempt(r, *cmd))
    finally:
        read_only(mnt, False)
    seen.append(r.get("k"))
    return [s.split(" script: ")[0] if isinstance(s, str) else s for s in seen]


def test_scripts_while_writes_are_denied(tmpfs, fresh_redis, fresh_skein):  # noqa: F811
    want = scripts_while_denied(fresh_redis(EXTRA), tmpfs)
    got = scripts_while_denied(fresh_skein(EXTRA), tmpfs)
    assert got == want, "\n".join("%r\n   %r" % (w, g) for w, g in zip(want, got))
