"""Differential tests: every script in tests/scripts runs against redis-server 7.0.15 and
skein-server, in RESP2 and RESP3, and the replies must match (see difftool.py)."""
import glob
import os

import pytest

from difftool import run_script

SCRIPTS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "scripts", "*.txt")))


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("path", SCRIPTS, ids=[os.path.basename(p) for p in SCRIPTS])
def test_script(path, proto, redis_server, skein_server):
    with open(path) as f:
        text = f.read()
    failures = run_script(text, redis_server.port, skein_server.port, proto,
                          os.path.basename(path))
    assert not failures, "\n".join(failures)
