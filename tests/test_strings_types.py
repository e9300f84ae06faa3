"""Differential checks of the string and bitmap commands that need commands of other
families: OBJECT ENCODING (int/embstr/raw transitions) and a list key (WRONGTYPE).
Each is skipped while skein-server does not have the command it needs."""
import pytest

from difftool import run_script
from resp_client import RawConn

ENCODINGS = r"""
SET i 12345
OBJECT ENCODING i
SET i2 -9223372036854775808
OBJECT ENCODING i2
SET big 9223372036854775808
OBJECT ENCODING big
SET z 007
OBJECT ENCODING z
SET plus +5
OBJECT ENCODING plus
SET e44 "12345678901234567890123456789012345678901234"
OBJECT ENCODING e44
SET r45 "123456789012345678901234567890123456789012345"
OBJECT ENCODING r45
SET s abc
OBJECT ENCODING s
APPEND s d
OBJECT ENCODING s
APPEND new 77
OBJECT ENCODING new
APPEND new2 abc
OBJECT ENCODING new2
SET s2 abc
SETRANGE s2 0 a
OBJECT ENCODING s2
SETRANGE s3 0 12
OBJECT ENCODING s3
INCR s3
OBJECT ENCODING s3
SET s4 abc
SETRANGE s4 1 ""
OBJECT ENCODING s4
SET s5 abc
SETBIT s5 0 0
OBJECT ENCODING s5
SET s6 10
GETBIT s6 0
OBJECT ENCODING s6
BITFIELD s6 GET u8 0
OBJECT ENCODING s6
BITFIELD s6 SET u8 0 49
OBJECT ENCODING s6
GET s6
SET s7 abc
BITFIELD s7 OVERFLOW FAIL INCRBY u2 0 100
OBJECT ENCODING s7
SETBIT nb 3 1
OBJECT ENCODING nb
BITOP NOT d s
OBJECT ENCODING d
SET f 1.5
INCRBYFLOAT f 0.5
OBJECT ENCODING f
INCRBYFLOAT f 1e60
OBJECT ENCODING f
SET n 5
INCRBYFLOAT n 1
OBJECT ENCODING n
INCRBY n 1
OBJECT ENCODING n
GETSET n 42
OBJECT ENCODING n
SETNX n9 99
OBJECT ENCODING n9
MSET m1 1 m2 two
OBJECT ENCODING m1
OBJECT ENCODING m2
SETEX se 100 123
OBJECT ENCODING se
GETEX se PERSIST
OBJECT ENCODING se
"""

WRONGTYPE = r"""
LPUSH l a
GET l
SET l v GET
GETSET l v
GETDEL l
GETEX l
GETEX l EX -1
GETEX l BADOPT
APPEND l x
STRLEN l
INCR l
DECRBY l 2
INCRBYFLOAT l 1
INCRBYFLOAT l bad
GETRANGE l 0 1
GETRANGE l x 1
SETRANGE l 0 x
SETRANGE l 0 ""
SETRANGE l -1 x
MGET l nokey
MSETNX l v other v
SETNX l v
SETBIT l 0 1
SETBIT l x 1
GETBIT l 0
BITCOUNT l
BITCOUNT l x y
BITPOS l 1
BITPOS l 2
BITOP AND d l
SET s abc
BITOP OR d s l
BITOP OR l s
TYPE l
BITFIELD l GET u8 0
BITFIELD l SET u8 0 1
BITFIELD l GET u99 0
BITFIELD_RO l GET u8 0
LPUSH l2 a
BITFIELD_RO l2 SET u8 0 1
LCS l s
LCS s l LEN
LCS nokey l BADOPT
SET l v
GET l
"""


def skein_has(port, *args):
    conn = RawConn(port)
    try:
        reply = conn.call(*args)
    finally:
        conn.close()
    return not reply.startswith(b"-ERR unknown command")


def run_both(text, redis_server, skein_server, proto, name):
    failures = run_script(text, redis_server.port, skein_server.port, proto, name)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("proto", [2, 3])
def test_string_encodings(redis_server, skein_server, proto):
    if not skein_has(skein_server.port, "OBJECT", "HELP"):
        pytest.skip("OBJECT is not in this build")
    run_both(ENCODINGS, redis_server, skein_server, proto, "encodings")


@pytest.mark.parametrize("proto", [2, 3])
def test_string_commands_on_wrong_type(redis_server, skein_server, proto):
    if not skein_has(skein_server.port, "LLEN", "nokey"):
        pytest.skip("lists are not in this build")
    run_both(WRONGTYPE, redis_server, skein_server, proto, "wrongtype")
