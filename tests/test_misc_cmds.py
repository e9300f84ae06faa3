"""CLUSTER, READONLY, READWRITE, ASKING, MODULE, LOLWUT, RESTORE-ASKING and MIGRATE against
redis-server 7.0.15 (cluster-enabled no, no module loaded), in RESP2 and RESP3."""
import socket
import threading

import pytest

from difftool import run_script
from resp_client import RawConn, parse

CLUSTER_SCRIPT = r"""
CLUSTER
CLUSTER nosuch
CLUSTER nosuch a b
CLUSTER ADDSLOTS 1
CLUSTER addslots
CLUSTER ADDSLOTSRANGE 1 1
CLUSTER addslotsrange
CLUSTER addslotsrange 1
CLUSTER BUMPEPOCH
CLUSTER bumpepoch 1
CLUSTER COUNT-FAILURE-REPORTS 1
CLUSTER count-failure-reports 1 1
CLUSTER COUNTKEYSINSLOT 1
CLUSTER countkeysinslot 1 1
CLUSTER DELSLOTS 1
CLUSTER delslots
CLUSTER DELSLOTSRANGE 1 1
CLUSTER delslotsrange
CLUSTER FAILOVER
CLUSTER FAILOVER FORCE
CLUSTER FLUSHSLOTS
CLUSTER flushslots 1
CLUSTER FORGET 1
CLUSTER forget 1 1
CLUSTER GETKEYSINSLOT 1 1
CLUSTER getkeysinslot 1 1 1
CLUSTER HELP
CLUSTER help 1
CLUSTER INFO
CLUSTER info 1
CLUSTER KEYSLOT foo
CLUSTER keyslot 1 1
CLUSTER LINKS
CLUSTER links 1
CLUSTER MEET 127.0.0.1 1
CLUSTER meet
CLUSTER MYID
CLUSTER myid 1
CLUSTER NODES
CLUSTER nodes 1
CLUSTER REPLICAS 1
CLUSTER replicas 1 1
CLUSTER REPLICATE 1
CLUSTER replicate 1 1
CLUSTER RESET
CLUSTER RESET HARD
CLUSTER SAVECONFIG
CLUSTER saveconfig 1
CLUSTER SET-CONFIG-EPOCH 1
CLUSTER set-config-epoch 1 1
CLUSTER SETSLOT 1 1
CLUSTER setslot
CLUSTER SHARDS
CLUSTER shards 1
CLUSTER SLAVES 1
CLUSTER slaves 1 1
CLUSTER SLOTS
CLUSTER slots 1
READONLY
READONLY x
READWRITE
READWRITE x
ASKING
ASKING x
MULTI
CLUSTER INFO
READONLY
ASKING
EXEC
"""

MODULE_SCRIPT = r"""
MODULE
MODULE HELP
MODULE help extra
MODULE LIST
MODULE list extra
MODULE nosuch
MODULE UNLOAD
MODULE LOAD
MODULE LOADEX
"""

# Loading needs enable-module-command (a PROTECTED command): see test_module_load.
MODULE_LOAD_SCRIPT = r"""
MODULE LOAD /nonexistent/module.so
MODULE LOAD /nonexistent/module.so arg1 arg2
MODULE LOAD /etc/passwd
MODULE LOADEX /nonexistent/module.so
MODULE LOADEX /nonexistent/module.so CONFIG a b ARGS x y
MODULE LOADEX /nonexistent/module.so CONFIG a
MODULE LOADEX /nonexistent/module.so bogus
MODULE UNLOAD nosuch
MODULE UNLOAD
MODULE UNLOAD a b
MODULE LIST
"""

# Version 5 draws nothing random in its first two rows of squares: byte for byte.
LOLWUT_SCRIPT = r"""
LOLWUT
LOLWUT 10 20
LOLWUT abc
LOLWUT VERSION
LOLWUT version abc
LOLWUT VERSION 1.5
LOLWUT VERSION 99999999999999999999
LOLWUT VERSION 4
LOLWUT VERSION 7
LOLWUT VERSION 0
LOLWUT VERSION -1
LOLWUT VERSION 59
LOLWUT VERSION 5 abc
LOLWUT VERSION 5 10 abc
LOLWUT VERSION 5 10 2 abc
LOLWUT VERSION 6 abc
LOLWUT VERSION 6 10 abc
LOLWUT VERSION 5 66 8 2
LOLWUT VERSION 5 66 8 1
LOLWUT VERSION 5 1 1 1
LOLWUT VERSION 5 2 1 2
LOLWUT VERSION 5 3 3 2
LOLWUT VERSION 5 0 0 0
LOLWUT VERSION 5 -7 -1 -1
LOLWUT VERSION 5 40 3 2 extra args
LOLWUT VERSION 5 1000 200 2
LOLWUT VERSION 5 5000 500 1
LOLWUT VERSION 5 77 7 2
LOLWUT VERSION 5 123 9 2
LOLWUT VERSION 5 31 200 2
LOLWUT VERSION 5 1000 1 1
LOLWUT VERSION 4294967301 20 2 2
@type LOLWUT VERSION 5
@type LOLWUT VERSION 6
@type LOLWUT VERSION 6 1 1
MULTI
LOLWUT VERSION 5 10 2 2
LOLWUT VERSION x
EXEC
"""

INTROSPECTION_SCRIPT = r"""
COMMAND INFO readonly readwrite asking lolwut restore-asking
COMMAND INFO cluster|info cluster|keyslot cluster|setslot cluster|help module|load module|list module|loadex module|unload module|help
COMMAND DOCS readonly readwrite asking lolwut restore-asking
COMMAND DOCS cluster|slots cluster|shards module|loadex
COMMAND GETKEYS restore-asking k 0 payload
COMMAND COUNT
"""


SCRIPTS = {
    "cluster": CLUSTER_SCRIPT,
    "module": MODULE_SCRIPT,
    # LOAD, LOADEX and UNLOAD refused: enable-module-command is off by default.
    "module-protected": MODULE_LOAD_SCRIPT,
    "lolwut": LOLWUT_SCRIPT,
}


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script(redis_server, skein_server, name, proto):
    failures = run_script(SCRIPTS[name], redis_server.port, skein_server.port, proto, name)
    assert not failures, "\n".join(failures)


def test_module_load(fresh_redis, fresh_skein):
    opts = ["--enable-module-command", "yes"]
    r, s = fresh_redis(opts), fresh_skein(opts)
    for proto in (2, 3):
        failures = run_script(MODULE_LOAD_SCRIPT, r.port, s.port, proto, "module-load")
        assert not failures, "\n".join(failures)


@pytest.mark.parametrize("proto", [2, 3])
def test_introspection(redis_server, skein_server, proto):
    script = INTROSPECTION_SCRIPT
    if skein_server.kind == "skein":
        # Skein lacks some commands of Redis's table (see docs/compatibility.md).
        script = script.replace("COMMAND COUNT\n", "")
    failures = run_script(script, redis_server.port, skein_server.port, proto, "introspection")
    assert not failures, "\n".join(failures)


def braille_shape(text):
    """Lines of a version-5 drawing: (characters per line, footer)."""
    body, _, footer = text.decode().rpartition("\nGeorg Nees")
    return [len(line) for line in body.split("\n")], footer


def skyline_shape(text):
    body, _, footer = text.decode().rpartition("\nDedicated")
    cells = []
    for line in body.split("\n"):
        parts = line.split("\x1b[0m")
        assert parts[-1] == ""
        for p in parts[:-1]:
            assert p in ("\x1b[0;30;40m ", "\x1b[0;90;100m ", "\x1b[0;37;47m ",
                         "\x1b[0;97;107m "), p
        cells.append(len(parts) - 1)
    return cells, footer


@pytest.mark.parametrize("args,shape", [
    ((), braille_shape),
    (("30", "4", "6"), braille_shape),
    (("200", "20", "40"), braille_shape),
])
def test_lolwut5_random_rows_have_redis_shape(redis_server, skein_server, args, shape):
    """Below its second row version 5 is random: the same number of lines of the same
    width and the same footer as Redis's."""
    got = [parse(RawConn(s.port).call("LOLWUT", "VERSION", "5", *args))
           for s in (redis_server, skein_server)]
    assert shape(got[0]) == shape(got[1])


@pytest.mark.parametrize("args", [(), ("1", "1"), ("33", "7"), ("200", "50")])
def test_lolwut6_has_redis_shape(redis_server, skein_server, args):
    got = [parse(RawConn(s.port).call("LOLWUT", "VERSION", "6", *args))
           for s in (redis_server, skein_server)]
    assert skyline_shape(got[0]) == skyline_shape(got[1])


@pytest.mark.parametrize("proto", [2, 3])
def test_restore_asking(redis_server, skein_server, proto):
    """RESTORE-ASKING is RESTORE under its own name (a payload from DUMP of a string is
    byte-identical on both servers)."""
    seen = []
    for srv in (redis_server, skein_server):
        c = RawConn(srv.port)
        if proto == 3:
            c.call("HELLO", "3")
        c.call("FLUSHALL")
        c.call("RPUSH", "list", "a", "b", "1")
        c.call("SET", "str", "hello")
        payload = parse(c.call("DUMP", "str"))
        lpayload = parse(c.call("DUMP", "list"))
        steps = [
            ("RESTORE-ASKING", "k", "0", payload),
            ("GET", "k"),
            ("RESTORE-ASKING", "k", "0", payload),
            ("RESTORE-ASKING", "k", "0", payload, "REPLACE"),
            ("RESTORE-ASKING", "k2", "100000", payload, "REPLACE", "IDLETIME", "5"),
            ("TTL", "k2"),
            ("RESTORE-ASKING", "k3", "1", payload, "ABSTTL"),
            ("EXISTS", "k3"),
            ("RESTORE-ASKING", "l2", "0", lpayload),
            ("LRANGE", "l2", "0", "-1"),
            ("RESTORE-ASKING", "k4", "-1", payload),
            ("RESTORE-ASKING", "k4", "0", b"garbage"),
            ("RESTORE-ASKING", "k4", "x", payload),
            ("RESTORE-ASKING", "k4", "0", payload, "FREQ", "300"),
            ("RESTORE-ASKING", "k4", "0", payload, "NOSUCH"),
            ("RESTORE-ASKING", "k4", "0"),
            ("restore-asking",),
            ("OBJECT", "ENCODING", "l2"),
        ]
        seen.append([c.call(*s) for s in steps])
        c.close()
    assert seen[0] == seen[1]
