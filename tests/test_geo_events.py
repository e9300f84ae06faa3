"""Geo commands' side effects against redis-server 7.0.15: keyspace notifications (GEOADD
announces `zadd` as the ZADD it runs, the stores `georadiusstore`/`geosearchstore`, `del`
for an empty result over an existing key, nothing for reads), the keyspace hit/miss and
dirty counters (each stored member counts), and the propagation stream: GEOADD as the
ZADD it became (scores as integers), the stores as called, nothing for a command that
changed nothing; replayed into a fresh Redis it gives the same sorted sets."""
from resp_client import RawConn
from test_counters import record as record_counters
from test_notifications import assert_same_notifications, cmd
from test_lists_propagation import assert_propagates, take
from test_zsets_events import zsets

SEQUENCE = [
    ("geoadd-new", [cmd("GEOADD", "g", "13.361389", "38.115556", "Palermo",
                        "15.087269", "37.502669", "Catania")]),
    ("geoadd-noop", [cmd("GEOADD", "g", "13.361389", "38.115556", "Palermo"),
                     cmd("GEOADD", "g", "NX", "1", "1", "Palermo"),
                     cmd("GEOADD", "g", "XX", "1", "1", "nosuch"),
                     cmd("GEOADD", "nokey", "XX", "1", "1", "a")]),
    ("geoadd-update", [cmd("GEOADD", "g", "CH", "13.583333", "37.316667", "Agrigento",
                           "15", "37.5", "Catania")]),
    ("geoadd-errors", [cmd("GEOADD", "g", "200", "1", "x"), cmd("GEOADD", "g", "NX", "XX", "1", "1", "x")]),
    ("reads", [cmd("GEOPOS", "g", "Palermo", "nosuch"), cmd("GEOPOS", "nokey", "a"),
               cmd("GEODIST", "g", "Palermo", "Catania"), cmd("GEODIST", "nokey", "a", "b"),
               cmd("GEOHASH", "g", "Palermo"), cmd("GEOHASH", "nokey", "a"),
               cmd("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
               cmd("GEOSEARCH", "nokey", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
               cmd("GEORADIUS", "g", "15", "37", "200", "km"),
               cmd("GEORADIUS_RO", "nokey", "15", "37", "200", "km"),
               cmd("GEORADIUSBYMEMBER", "g", "Palermo", "200", "km"),
               cmd("GEORADIUSBYMEMBER_RO", "g", "nosuch", "200", "km")]),
    ("georadius-store", [cmd("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "dst")]),
    ("georadius-storedist", [cmd("GEORADIUS", "g", "15", "37", "200", "km", "STOREDIST", "dst")]),
    ("georadius-store-twice", [cmd("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "a",
                                   "STORE", "b")]),
    ("georadiusbymember-store", [cmd("GEORADIUSBYMEMBER", "g", "Palermo", "300", "km",
                                     "STOREDIST", "dst2", "COUNT", "2")]),
    ("store-empty-over-key", [cmd("GEORADIUS", "g", "0", "0", "1", "km", "STORE", "dst2")]),
    ("store-empty-no-key", [cmd("GEORADIUS", "g", "0", "0", "1", "km", "STORE", "dst2")]),
    ("store-missing-source", [cmd("GEORADIUS", "nokey", "0", "0", "1", "km", "STORE", "dst")]),
    ("geosearchstore", [cmd("GEOSEARCHSTORE", "dst3", "g", "FROMMEMBER", "Palermo", "BYBOX",
                            "600", "600", "km")]),
    ("geosearchstore-dist", [cmd("GEOSEARCHSTORE", "dst3", "g", "FROMMEMBER", "Palermo",
                                 "BYRADIUS", "600", "km", "STOREDIST", "COUNT", "1")]),
    ("geosearchstore-over-string", [cmd("SET", "str", "x"),
                                    cmd("GEOSEARCHSTORE", "str", "g", "FROMLONLAT", "15", "37",
                                        "BYRADIUS", "600", "km")]),
    ("geosearchstore-empty", [cmd("GEOSEARCHSTORE", "dst3", "g", "FROMLONLAT", "0", "0",
                                  "BYRADIUS", "1", "m")]),
    ("geosearchstore-missing-source", [cmd("GEOSEARCHSTORE", "str", "nokey", "FROMLONLAT",
                                           "0", "0", "BYRADIUS", "1", "m")]),
    ("store-errors", [cmd("GEORADIUS", "g", "15", "37", "200", "km", "STORE", "dst", "WITHDIST"),
                      cmd("GEOSEARCHSTORE", "dst", "str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m")]),
    ("big", [cmd("GEOADD", "big", *[x for i in range(200)
                                     for x in ("%f" % (i / 10.0), "%f" % (i / 20.0), "m%d" % i)]),
             cmd("GEOSEARCHSTORE", "bigdst", "big", "FROMLONLAT", "5", "5", "BYRADIUS", "500", "km")]),
]


def test_geo_notifications(redis_server, skein_server):
    assert_same_notifications(redis_server.port, skein_server.port, SEQUENCE, 20)


def test_geo_counters(redis_server, skein_server):
    seq = [("setup", [cmd("FLUSHALL")])] + SEQUENCE
    a, b = record_counters(redis_server.port, seq), record_counters(skein_server.port, seq)
    diffs = ["step %s:\n  redis: %r\n  skein: %r" % (x[0], x[1:], y[1:])
             for x, y in zip(a, b) if x[1:] != y[1:]]
    assert not diffs, "\n".join(diffs)


def test_geo_commands_propagate_as_redis_rewrites_them(fresh_skein):
    c = RawConn(fresh_skein().port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    steps = [
        (["GEOADD", "g", "13.361389", "38.115556", "Palermo"],
         [[b"zadd", b"g", b"3479099956230698", b"Palermo"]]),
        (["GEOADD", "g", "ch", "Xx", "13.361389", "38.115556", "Palermo", "1", "1", "x"], []),
        (["GEOADD", "g", "CH", "15.087269", "37.502669", "Catania", "13.361389", "38.115556", "Palermo"],
         [[b"zadd", b"g", b"CH", b"3479447370796909", b"Catania", b"3479099956230698", b"Palermo"]]),
        (["GEOADD", "g", "300", "0", "bad"], []),
        (["GEORADIUS", "g", "15", "37", "200", "km"], []),
        (["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "d"],
         [[b"GEORADIUS", b"g", b"15", b"37", b"200", b"km", b"STORE", b"d"]]),
        (["GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST"],
         [[b"GEOSEARCHSTORE", b"d2", b"g", b"FROMLONLAT", b"15", b"37", b"BYRADIUS", b"200", b"km",
           b"STOREDIST"]]),
        (["GEOSEARCHSTORE", "d3", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"], []),
        (["GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"], []),
    ]
    assert_propagates(c, steps)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"


def test_geo_propagation_replays_into_redis(fresh_skein, fresh_redis):
    sk, ref = fresh_skein(), fresh_redis()
    c = RawConn(sk.port)
    assert c.call("DEBUG", "PROPAGATION", "START") == b"+OK\r\n"
    for _, actions in SEQUENCE:
        for act in actions:
            c.call(*act[1:])
    cmds = take(c)
    assert c.call("DEBUG", "PROPAGATION", "STOP") == b"+OK\r\n"
    feed = RawConn(ref.port)
    errors = [r for r in (feed.call(*x) for x in cmds) if r[:1] == b"-"]
    assert errors == [] and zsets(sk.port) == zsets(ref.port)
