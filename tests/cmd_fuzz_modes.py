"""Step kinds of the command fuzzer (tests/cmd_fuzz.py) that need more than one request
and one reply: inline requests, CLIENT REPLY, subscribe mode, keyspace notifications,
client tracking, MONITOR and generated Lua bodies.

Each kind is one entry of MODES: a Generator method that builds the step (plain JSON, so
a --log line can replay it) and a Runner method that runs it on both servers. A step that
talks to more than one connection opens fresh ones of its own, closed when it ends, and
reads what each sends until a sentinel (a PING, ECHO or monitored command carrying
SENTINEL) comes back, so that the whole stream, pushes included, is compared.
"""
import re
import socket
import time

from resp_client import RawConn, encode, parse

SENTINEL = b"fz-sentinel-7f3"
CHANNELS = ["c1", "c2", "news.a", "news.b", "", "c*", "x" * 40, "k1"]
SUB_PATTERNS = ["c*", "*", "news.*", "c[12]", "c?", "\\*", "news.[a-b]", "[", "c1",
                "__key*__:*"]
MESSAGES = ["hello", "", "1", "x" * 100, "\x00\xff", "a b"]
NOTIFY_FLAGS = "KEg$lshzxetmdnA"
TRACK_PREFIXES = ["k", "h", "k1", "z", "", "s1", "x"]
# (A raised error's CR or LF would break Redis's protocol: Redis writes its text as is.)
LUA_STRINGS = ["my err", "-ERR x", "ERR", "", "WRONGTYPE bad", "x\ty", "OK", "-",
               "  lead", "-my err", "NOPERM x", "a\x00b", "-\x00", "e\r\n"]
# Wrappers of a generated command `{c}` (its arguments as Lua literals).
LUA_WRAPS = [
    "return redis.call({c})",
    "return redis.pcall({c})",
    "local r = redis.pcall({c}) if type(r) == 'table' and r.err then "
    "return 'err:' .. r.err end return r",
    "return type(redis.pcall({c}))",
    "local ok, e = pcall(redis.call, {c}) if ok then return {{1, e}} end "
    "return {{0, type(e) == 'table' and e.err or e}}",
    "redis.setresp(3) return redis.call({c})",
    "redis.setresp(3) local r = redis.pcall({c}) if type(r) == 'table' then local t = {{}} "
    "for k, v in pairs(r) do t[#t + 1] = type(k) .. ':' .. type(v) end table.sort(t) "
    "return t end return type(r)",
    "local r = redis.pcall({c}) if type(r) == 'table' then return #r end "
    "return tostring(r)",
    "return {{redis.pcall({c}), 'after'}}",
    "return cjson.encode({{redis.pcall({c})}})",
    "local r = redis.pcall({c}) if r == false then return 'false' end return r",
    "redis.setresp(3) local r = redis.pcall({c}) if type(r) == 'table' and r.double "
    "then return tostring(r.double) end return r",
]
# Bodies that return a value of their own (`{s}`: a generated string literal).
LUA_BODIES = [
    "return redis.status_reply({s})", "return redis.error_reply({s})",
    "return {{err={s}}}", "return {{ok={s}}}", "return {{err={s}, ok='x'}}",
    "return {{1, 2, {{3, 'x', {{}}}}, false, true, 3.7, -2.5}}", "return {{1, nil, 3}}",
    "return redis.error_reply()", "return redis.status_reply(5)",
    "return {{double=3.5}}", "return {{map={{a=1}}}}", "return {{set={{a=true}}}}",
    "return {{big_number='123'}}", "return {{verbatim_string={{format='txt', string={s}}}}}",
    "return {{{{err={s}}}, {{ok={s}}}}}", "return redis.error_reply({s} .. ' tail')",
    "error({s})", "error({{err={s}}})", "return pcall(error, {s})",
    "return {{pcall(redis.error_reply, {s})}}", "return 1e300", "return -0.5",
    "return true", "return false", "return {{true, false}}", "return {s}",
]
# Arguments of redis.call that are not strings: numbers (sent as %.17g), and what it
# refuses.
LUA_ODD_ARGS = ["3.5", "0.1", "1e20", "-0", "1/0", "0/0", "-1/0", "true", "false", "nil",
                "{}", "{1}", "12345678901234567890", "2^53", "-(2^63)", "1e-7",
                "100", "-3", "0x10", "redis"]
NOTIFY_SCRIPTS = [
    "redis.call('SET', KEYS[1], 'x') redis.call('EXPIRE', KEYS[1], 100) "
    "return redis.call('DEL', KEYS[1])",
    "return redis.pcall('INCR', KEYS[1])",
    "redis.call('LPUSH', KEYS[1], 'a') return redis.call('LPOP', KEYS[1])",
    "return redis.call('GET', KEYS[1])",
]
LUA_PREFIXES = ["", "", "redis.setresp(3) ", "redis.setresp(2) "]
# Commands that change the connection itself or its mode, not generated inside a step
# whose connections the runner manages.
MODE_UNSAFE = {"multi", "exec", "discard", "watch", "unwatch", "reset", "hello", "auth",
               "select", "client|reply", "client|setname", "client|no-evict"}


def lua_literal(s):
    out = []
    for ch in s:
        if ch in "\"\\" or not " " <= ch <= "~":
            out.append("\\%03d" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def inline_word(r, arg):
    """One argument as sdssplitargs reads it back: bare, "quoted" or 'quoted'."""
    if arg and re.fullmatch(r"[A-Za-z0-9_.:*?$>+\-]+", arg) and r.random() < 0.7:
        return arg
    if "'" not in arg and "\\" not in arg and all(" " <= c <= "~" for c in arg) \
            and r.random() < 0.3:
        return "'" + arg + "'"
    out = []
    for ch in arg:
        if ch in "\"\\":
            out.append("\\" + ch)
        elif ch in "\n\r\t\b\a" and r.random() < 0.5:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
                        "\a": "\\a"}[ch])
        elif not " " <= ch <= "~" or r.random() < 0.05:
            out.append("\\x%02x" % ord(ch) if r.random() < 0.5 else "\\x%02X" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def is_push(frame):
    if frame[:1] == b">":
        return True
    if frame[:1] != b"*":
        return False
    p = parse(frame)
    return isinstance(p, list) and len(p) >= 3 and p[0] in (
        b"message", b"pmessage", b"smessage")


def is_message(frame):
    p = parse(frame) if frame[:1] in (b"*", b">") else None
    return isinstance(p, list) and len(p) >= 3 and p[0] in (
        b"message", b"pmessage", b"smessage")


def to_reply(conn, cmd):
    """Send `cmd`; what comes back up to its reply (pushes before it included)."""
    conn.send_raw(encode(cmd))
    frames = [conn.read_reply()]
    while is_push(frames[-1]):
        frames.append(conn.read_reply())
    return frames


def sort_push_runs(frames, member=is_push):
    """Each run of consecutive pushes (`member`s) as a multiset (which of several
    patterns or keys comes first is hash-table order), everything else where it is."""
    out, run = [], []
    for f in frames + [None]:
        if f is not None and member(f):
            run.append(f)
            continue
        out += sorted(run)
        run = []
        if f is not None:
            out.append(f)
    return out


def unordered(cmd, who, frames):
    """What a subscriber got, without the order Redis takes from its hash tables: of the
    pushes a publication makes, of the channels a mass unsubscribe leaves (so also of
    the counts each confirmation carries), of PUBSUB CHANNELS's list."""
    low = [x.lower() for x in cmd]
    if who == "pub":
        return sorted(frames)
    if low[0].endswith(b"unsubscribe") and len(low) == 1 and len(frames) > 1:
        parts = [parse(f) for f in frames]
        return (sorted(f[:1] for f in frames), sorted(repr(p[:2]) for p in parts),
                sorted(repr(p[2:]) for p in parts))
    if low[:2] in ([b"pubsub", b"channels"], [b"pubsub", b"shardchannels"]):
        return [sorted(repr(x) for x in parse(f)) if f[:1] == b"*" else f for f in frames]
    # The notifications of its own write (RESP3) come after the reply in Skein, before
    # it in Redis (compatibility.md, Keyspace notifications).
    own = [f for f in frames if is_message(f) and parse(f)[-2].startswith(b"__key")]
    frames = [f for f in frames if f not in own] + own
    return sort_push_runs(frames, is_message)  # (its own PUBLISH, in RESP3)


MONITOR_HEAD = re.compile(rb"^\+\d+\.\d+ \[(\d+) ([^\]]*)\]")


def monitor_line(frame):
    def sub(m):
        return b"+T [" + m.group(1) + b" " + (b"lua" if m.group(2) == b"lua" else b"addr") \
            + b"]"
    return MONITOR_HEAD.sub(sub, frame)


def notification_key(frame):
    p = parse(frame)
    if not isinstance(p, list) or len(p) != 4 or p[0] != b"pmessage":
        return b""
    chan, msg = p[2], p[3]
    if b"__keyspace@" in chan:
        return chan.split(b":", 1)[1]
    return msg


def notification_event(frame):
    p = parse(frame)
    if not isinstance(p, list) or len(p) != 4:
        return b""
    chan, msg = p[2], p[3]
    return msg if b"__keyspace@" in chan else chan.split(b":", 1)[-1]


class ModeSteps:
    """Generator side (mixed into cmd_fuzz.Generator: self.r, self.commands,
    self.specs, self.well_formed, self.malformed, self.rand_case, self.rules)."""

    def plain_command(self, strict=False, keyed=False, malformed=0.0):
        """A command that neither blocks nor changes the connection, well-formed but for
        that share of them; strict: one whose reply is compared byte for byte."""
        for _ in range(1000):
            name = self.r.choice(self.commands)
            spec = self.specs[name]
            if name in MODE_UNSAFE or name.split("|")[0] in MODE_UNSAFE or \
                    "BLOCKING" in spec.get("command_flags", []) or \
                    name.split("|")[0] in ("eval", "evalsha", "eval_ro", "evalsha_ro",
                                           "fcall", "fcall_ro", "script", "function"):
                continue
            if strict and (name in self.rules or name.split("|")[0] in self.rules):
                continue
            if keyed and not any(a.get("type") == "key" for a in spec.get("arguments", [])):
                continue
            if self.r.random() < malformed:
                return name, self.malformed(name)
            return name, self.well_formed(name)
        return "ping", ["PING"]

    def inline_step(self):
        r = self.r
        for _ in range(100):
            name = r.choice(self.commands)
            if "BLOCKING" not in self.specs[name].get("command_flags", []):
                break
        args = self.well_formed(name) if r.random() < 0.85 else self.malformed(name)
        words = [inline_word(r, a) for a in args]
        if len(words) > 1 and r.random() < 0.1:  # escapes sdssplitargs reads its own way
            words[r.randrange(1, len(words))] = r.choice(
                ['"\\xZZ"', '"\\x4"', '"\\x4g"', '"\\q\\z"', '"a\\"b"', "'a\\b'",
                 "'a\\'b'", '"\\x00\\xFf"', '""', "''", '"\\"', 'a"b"c', "a'b'",
                 '"\\\\"', '"\\t\\v"'])
        sep = [r.choice([" ", " ", " ", "  ", "\t"]) for _ in words]
        line = "".join(w + s for w, s in zip(words, sep)).rstrip(" \t")
        k = r.random()
        if k < 0.04:
            line += ' "unterminated'
        elif k < 0.07:
            line += " 'un"
        elif k < 0.1:
            line += ' "a"b'
        elif k < 0.13:
            line += " '\\'x'y"
        elif k < 0.16:
            line = r.choice(["\r\n", "  \r\n", "\n"]) + line
        elif k < 0.18:
            line = " " + line
        elif k < 0.24:  # a multibulk that answers nothing, or a protocol error
            line = r.choice(["*0\r\n", "*-1\r\n", "*abc\r\n", "*1\r\n$abc\r\n",
                             "*1\r\nx\r\n", "*1\r\n$-1\r\n", "*-5\r\n", "*\r\n",
                             "*2\r\n$1\r\na\r\n$\r\n", "*1\r\n$1x\r\n",
                             "*3000000000\r\n", "*1\r\n$600000000\r\n"]) + line
        end = r.choice(["\r\n", "\r\n", "\n"])
        return "inline", [name, line + end] + args

    def reply_step(self):
        r = self.r
        cmds = []
        for _ in range(r.randint(2, 8)):
            if r.random() < 0.35:
                cmds.append(["CLIENT", "REPLY", self.rand_case(
                    r.choice(["ON", "OFF", "SKIP", "SKIP", "OFF", "bad"]))] +
                    (["x"] if r.random() < 0.05 else []))
            else:
                cmds.append(self.plain_command(strict=True)[1])
        return "reply", cmds + [["CLIENT", "REPLY", "ON"]]

    def subscribe_step(self):
        r = self.r
        acts = []
        for _ in range(r.randint(2, 14)):
            k = r.random()
            n = r.choice([1, 1, 2, 3, 0])
            if k < 0.22:
                acts.append(["sub", self.rand_case(r.choice(["SUBSCRIBE", "SSUBSCRIBE"]))]
                            + r.sample(CHANNELS, n))
            elif k < 0.34:
                acts.append(["sub", self.rand_case("PSUBSCRIBE")] + r.sample(SUB_PATTERNS, n))
            elif k < 0.48:
                acts.append(["sub", self.rand_case(r.choice(
                    ["UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"]))] +
                    r.sample(CHANNELS + SUB_PATTERNS, r.choice([0, 0, 1, 2])))
            elif k < 0.66:
                acts.append(["pub", self.rand_case(r.choice(["PUBLISH", "PUBLISH", "SPUBLISH"])),
                             r.choice(CHANNELS), r.choice(MESSAGES)])
            elif k < 0.72:  # from a script
                acts.append(["pub", "EVAL", "return redis.call('%s', ARGV[1], ARGV[2])"
                             % r.choice(["PUBLISH", "SPUBLISH"]), "0", r.choice(CHANNELS),
                             r.choice(MESSAGES)])
            elif k < 0.82:
                acts.append(["sub"] + r.choice([
                    ["PING"], ["PING", "x"], ["PING", "a", "b"], ["GET", "k1"],
                    ["PUBLISH", r.choice(CHANNELS), "self"], ["ECHO", "e"], ["RESET"],
                    ["PUBSUB", "NUMSUB", "c1", "c2"], ["PUBSUB", "NUMPAT"],
                    ["PUBSUB", "SHARDNUMSUB", "c1"], ["PUBSUB", "CHANNELS"],
                    ["PUBSUB", "SHARDCHANNELS", "*"], ["QUUX"], ["SUBSCRIBE"],
                    ["CLIENT", "ID", "x"], ["SET", "k9", "v"], ["HELLO", "2"],
                    ["HELLO", "3"], ["CLIENT", "REPLY", r.choice(["OFF", "SKIP", "ON"])],
                    ["CLIENT", "REPLY", "ON"]]))
            elif k < 0.9:
                acts.append(["pub", "PUBSUB", self.rand_case(r.choice(
                    ["NUMSUB", "SHARDNUMSUB"]))] + r.sample(CHANNELS, n))
            else:
                acts.append(["sub"] + self.plain_command(strict=True)[1])
        return "subscribe", acts

    def notify_step(self):
        r = self.r
        flags = "".join(r.choice(NOTIFY_FLAGS) for _ in range(r.randint(0, 6)))
        if r.random() < 0.8:  # (without K or E nothing is published)
            flags = r.choice(["K", "E", "KE"]) + flags + r.choice(["A", "", ""])
        if r.random() < 0.05:
            flags += r.choice(["Q", " ", "k"])
        cmds = []
        for _ in range(r.randint(1, 8)):
            k = r.random()
            if k < 0.08:
                cmds.append(["eval", ["EVAL", r.choice(NOTIFY_SCRIPTS), "1",
                                      r.choice(self.keys)]])
            elif k < 0.11:  # another database's events
                key = r.choice(self.keys)
                cmds.append(r.choice([["select", ["SELECT", r.choice(["0", "1", "9"])]],
                                      ["move", ["MOVE", key, "1"]],
                                      ["swapdb", ["SWAPDB", "0", "1"]],
                                      ["copy", ["COPY", key, key, "DB", "1", "REPLACE"]]]))
            elif k < 0.17:  # a blocked command served (or not) by another's write
                _, (blocking, other, name) = self.blocked_pair()
                cmds.append(["blocked", [blocking, other, name]])
            elif k < 0.2:  # (the events of a transaction's commands come with EXEC)
                cmds += [["multi", ["MULTI"]]] + [
                    self.plain_command(strict=True, keyed=True)
                    for _ in range(r.randint(1, 3))] + [["exec", ["EXEC"]]]
            else:
                cmds.append(self.plain_command(keyed=r.random() < 0.9, malformed=0.15))
        return "notify", [flags] + cmds

    def tracking_step(self):
        r = self.r
        opts = []
        if r.random() < 0.35:
            opts.append("BCAST")
            prefixes = r.sample(TRACK_PREFIXES, r.choice([0, 1, 1, 2, 3]))
            # A later prefix overlapping a later one is a documented difference.
            later = prefixes[1:]
            if any(a != b and b.startswith(a) for a in later for b in later):
                prefixes = prefixes[:2]
            for p in prefixes:
                opts += ["PREFIX", p]
        elif r.random() < 0.05:
            opts += ["PREFIX", "k"]
        for opt in ("OPTIN", "OPTOUT", "NOLOOP"):
            if r.random() < 0.2:
                opts.append(opt)
        if r.random() < 0.04:
            opts.append(r.choice(["BAD", "REDIRECT"]))
        opts = [self.rand_case(o) for o in opts]
        redirect = r.random() < 0.85  # (RESP2 only: a redirection to a subscriber)
        acts = []
        for _ in range(r.randint(2, 12)):
            k = r.random()
            key = r.choice(self.keys[:3] + ["s1", "h1", "z1", "nokey"])
            if k < 0.3:
                acts.append(["read"] + r.choice([
                    ["GET", key], ["MGET", key, r.choice(self.keys)], ["STRLEN", key],
                    ["EXISTS", key], ["TYPE", key], ["HGET", key, "a"],
                    ["SCARD", key], ["ZSCORE", key, "a"], ["GETRANGE", key, "0", "2"]]))
            elif k < 0.38:
                acts.append(["read"] + self.plain_command(strict=True)[1])
            elif k < 0.62:
                acts.append(["write"] + r.choice([
                    ["SET", key, "v"], ["DEL", key, r.choice(self.keys)], ["INCR", key],
                    ["APPEND", key, "x"], ["MSET", key, "1", r.choice(self.keys), "2"],
                    ["EXPIRE", key, "0"], ["FLUSHDB"], ["SADD", key, "m"],
                    ["HSET", key, "a", "b"], ["RENAME", key, r.choice(self.keys)],
                    ["SET", key, "v", "XX"], ["GETDEL", key],
                    # Tracking goes by key name, whatever the database.
                    ["SELECT", r.choice(["0", "1"])], ["MOVE", key, "1"], ["SWAPDB", "0", "1"],
                    ["COPY", key, r.choice(self.keys), "DB", r.choice(["0", "1"])],
                    ["FLUSHALL"], ["FLUSHALL", "ASYNC"], ["FLUSHDB", "SYNC"]]))
            elif k < 0.7:
                acts.append(["write"] + self.plain_command(strict=True, keyed=True)[1])
            elif k < 0.8:
                acts.append(["self"] + r.choice([["SET", key, "own"], ["DEL", key],
                                                 ["INCR", key]]))
            elif k < 0.84:  # a transaction of the tracking client
                acts += [["read", "MULTI"]] + [r.choice([
                    ["read", "GET", key], ["self", "SET", key, "t"], ["read", "MGET", key, "k2"],
                    ["read", "CLIENT", "CACHING", "YES"]]) for _ in range(r.randint(0, 3))] + \
                    [["read", r.choice(["EXEC", "EXEC", "DISCARD"])]]
            elif k < 0.92:
                acts.append(["read", "CLIENT", "CACHING", self.rand_case(
                    r.choice(["YES", "NO", "yes", "maybe"]))])
            else:
                acts.append(["read"] + r.choice([
                    ["CLIENT", "TRACKING", "ON"], ["CLIENT", "TRACKING", "OFF"],
                    ["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "z"],
                    ["CLIENT", "TRACKING", "ON", "OPTIN"], ["PING"]]))
        return "tracking", [opts, redirect, acts]

    def monitor_step(self):
        r = self.r
        cmds = []
        for _ in range(r.randint(1, 6)):
            if r.random() < 0.15:
                cmds.append(["EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1",
                             r.choice(self.keys), r.choice(MESSAGES)])
            elif r.random() < 0.05:
                cmds.append(r.choice([["AUTH", "x"], ["HELLO", "2", "AUTH", "a", "b"],
                                      ["CONFIG", "GET", "hz"]]))
            elif r.random() < 0.12:  # a transaction, sent at once (a list of commands)
                block = [self.plain_command(strict=True)[1]
                         for _ in range(r.randint(0, 3))]
                if r.random() < 0.2:
                    block.insert(r.randint(0, len(block)), ["NOSUCHCMD"])
                cmds.append([["MULTI"]] + block + [[r.choice(["EXEC", "EXEC", "DISCARD"])]])
            else:
                cmds.append(self.plain_command(strict=True, malformed=0.15)[1])
        return "monitor", cmds

    def lua_step(self):
        r = self.r
        pre = r.choice(LUA_PREFIXES)
        if r.random() < 0.6:
            name, inner = self.plain_command()
            if r.random() < 0.15:
                inner = self.malformed(name)
            wrap = r.choice(LUA_WRAPS)
            rule = name if wrap.startswith("return redis.") and wrap.count("{c}") == 1 \
                and len(wrap) < 30 else "nested:" + name
            lits = [lua_literal(a) for a in inner]
            if r.random() < 0.25:  # an argument that is not a string
                lits[r.randrange(len(lits))] = r.choice(LUA_ODD_ARGS)
            body = pre + wrap.format(c=", ".join(lits))
        else:
            rule = "lua"
            body, text = r.choice(LUA_BODIES), r.choice(LUA_STRINGS)
            if "error(" in body:
                text = text.replace("\r\n", "")
            body = pre + body.format(s=lua_literal(text))
        if r.random() < 0.3:
            body = "local x = 1\n" + body
        inner = rule.split(":")[-1]
        strict = not (self.rules.get(inner) or self.rules.get(inner.split("|")[0]))
        if strict and r.random() < 0.3:  # the same body as a function
            code = "#!lua name=fzlib\nredis.register_function('fzf', function(keys, args)\n" \
                + body + "\nend)"
            return "pipeline", [["function|load", ["FUNCTION", "LOAD", "REPLACE", code]],
                                ["fcall", ["FCALL", "fzf", "0"]]]
        return "lua", [rule, "EVAL", body, "0"]

    def watch_step(self):
        """WATCH on one connection, a command on another, then MULTI/EXEC: whether the
        command counted as a change of the watched keys (signalModifiedKey)."""
        r = self.r
        name, cmd = self.plain_command(keyed=True, malformed=0.1)
        keys = [a for a in cmd[1:] if a in self.keys] or [r.choice(self.keys)]
        watched = sorted(set(keys[:2] + ([r.choice(self.keys)] if r.random() < 0.2 else [])))
        return "watched", [watched, name, cmd]

    def mode_step(self, kinds):
        return getattr(self, MODES[self.r.choice(kinds)][0])()


class ModeRunner:
    """Runner side (mixed into cmd_fuzz.Runner: self.ports, self.proto, self.failures,
    self.send, self.sent, self.timeout)."""

    def open_pair(self, proto=None):
        pair = [RawConn(p, timeout=self.timeout) for p in self.ports]
        self.mode_conns += pair
        if (proto or self.proto) == 3:
            for c in pair:
                c.call("HELLO", "3")
        return pair

    def close_mode_conns(self):
        """RESET first (leaving subscriptions, tracking and MONITOR while the step still
        waits: a closed connection leaves them whenever its server notices), then close."""
        for c in self.mode_conns:
            try:
                c.send_raw(encode(["RESET"]))
                for _ in range(10000):
                    if c.read_reply() == b"+RESET\r\n":
                        break
            except (socket.timeout, ConnectionError, OSError, ValueError):
                pass
            c.close()
        self.mode_conns = []

    def drain(self, pair, via=None):
        """What each connection of `pair` sends until the sentinel: a PING on it, or,
        for a MONITOR connection, an ECHO on the `via` connection of the same server."""
        out = []
        for i, c in enumerate(pair):
            if via:
                via[i].call("ECHO", SENTINEL)
            else:
                c.send_raw(encode([b"PING", SENTINEL]))
            frames = []
            while True:
                f = c.read_reply()
                if SENTINEL in f:
                    break
                frames.append(f)
            out.append(frames)
        return out

    def push_drain(self, sub, pub):
        """What each subscriber of `sub` sends until a message published (from `pub`) to
        a new sentinel channel, which it subscribes first: pushes are sent whatever
        CLIENT REPLY says. Published once the subscription is in place (so the subscriber
        has run everything sent before; PUBSUB NUMSUB counts no pattern)."""
        self.sentinels = getattr(self, "sentinels", 0) + 1
        chan = SENTINEL + b"-%d" % self.sentinels
        out = []
        for s, p in zip(sub, pub):
            s.send_raw(encode([b"SUBSCRIBE", chan]))
            for _ in range(400):
                if parse(p.call("PUBSUB", "NUMSUB", chan))[1] > 0:
                    break
                time.sleep(0.005)
            p.call("PUBLISH", chan, SENTINEL)
            frames = []
            while True:
                f = s.read_reply()
                if is_message(f) and parse(f)[1] == chan:
                    break
                frames.append(f)
            out.append(frames)
        return out

    def mode_diff(self, kind, what, a, b):
        self.failures.append("#%d RESP%d %s: %s\n  redis: %r\n  skein: %r"
                             % (self.sent, self.proto, kind, what, a, b))

    def run_mode(self, kind, args):
        self.sent += 1
        self.mode_conns = getattr(self, "mode_conns", [])
        try:
            getattr(self, MODES[kind][1])(*args) if kind == "inline" else \
                getattr(self, MODES[kind][1])(args)
        except (socket.timeout, ConnectionError, OSError, ValueError) as e:
            self.failures.append("#%d RESP%d %s step %r: %r" % (self.sent, self.proto, kind,
                                                                args, e))
            if kind == "inline":
                self.close()
                self.connect()
        finally:
            self.close_mode_conns()

    def run_inline(self, name, line, *args):
        self.sent -= 1
        self.send(name, list(args), raw=line.encode("latin-1"))

    def run_reply(self, cmds):
        pair = self.open_pair()
        raw = b"".join(encode([a.encode("latin-1") for a in c]) for c in cmds)
        for c in pair:
            c.send_raw(raw)
        got = self.drain(pair)
        if got[0] != got[1]:
            self.mode_diff("reply", " / ".join(" ".join(c) for c in cmds), *got)

    def run_subscribe(self, acts):
        sub, pub = self.open_pair(), self.open_pair()
        quiet = False  # (after CLIENT REPLY OFF or SKIP the PING may answer nothing)
        for act in acts:
            who, cmd = act[0], [a.encode("latin-1") for a in act[1:]]
            what = "%s %s" % (who, b" ".join(cmd)[:200])
            if who == "pub":
                got = [c.call(*cmd) for c in pub]
                if cmd[0].lower() == b"pubsub":
                    if got[0] != got[1]:
                        self.mode_diff("subscribe", what, *got)
                    continue
                if got[0] != got[1]:
                    self.mode_diff("subscribe", what + " (reply)", *got)
            else:
                for c in sub:
                    c.send_raw(encode(cmd))
            low = [x.lower() for x in cmd]
            if low[:2] == [b"client", b"reply"]:  # (ON may be refused: stays quiet)
                quiet = True
            got = self.push_drain(sub, pub) if quiet else self.drain(sub)
            got = [unordered(cmd, who, g) for g in got]
            if cmd[0].lower() == b"hello":  # (its map holds the connection's id)
                got = [[f[:1] for f in g] for g in got]
            if got[0] != got[1]:
                self.mode_diff("subscribe", what, *got)

    def run_notify(self, args):
        flags, cmds = args[0], args[1:]
        writer, sub = self.open_pair(proto=2), self.open_pair()
        for c in sub:
            c.call("PSUBSCRIBE", "__key*__:*")
        saved = parse(writer[0].call("CONFIG", "GET", "notify-keyspace-events"))[1]
        got = [c.call("CONFIG", "SET", "notify-keyspace-events", flags) for c in writer]
        if got[0] != got[1]:
            self.mode_diff("notify", "CONFIG SET notify-keyspace-events %r" % flags, *got)
        try:
            for name, cmd in cmds:
                if name == "blocked":
                    waiter = getattr(self, "waiter", None) or self.open_pair(proto=2)
                    self.waiter = waiter
                    cmd, name = self.serve_blocked(waiter, writer, *cmd)
                else:
                    enc = [a.encode("latin-1") for a in cmd]
                    a, b = (c.call(*enc) for c in writer)
                    if not self.judge(name, cmd, a, b):
                        self.mode_diff("notify", "writer: " + " ".join(cmd)[:200], a, b)
                got = self.drain(sub)
                # Active expiry is timing: its events are not compared. Events of
                # different keys of one command may come in either order.
                got = [sorted((f for f in g if notification_event(f) != b"expired"),
                              key=notification_key) for g in got]
                if got[0] != got[1]:
                    self.mode_diff("notify", "flags %r, %s" % (flags, " ".join(cmd)[:200]),
                                   *got)
        finally:
            self.waiter = None
            for c in writer:
                c.call("CONFIG", "SET", "notify-keyspace-events", saved)

    def serve_blocked(self, waiter, writer, blocking, other, name):
        """`blocking` on `waiter`, then `other` on `writer` once it waits; both replies
        compared. Returns the two as one command, and `other`'s name."""
        for c in waiter:
            c.send_raw(encode([a.encode("latin-1") for a in blocking]))
        time.sleep(0.03)
        a, b = (c.call(*[x.encode("latin-1") for x in other]) for c in writer)
        if not self.judge(name, other, a, b):
            self.mode_diff("notify", "writer: " + " ".join(other)[:200], a, b)
        x, y = (c.read_reply() for c in waiter)
        if x != y:
            self.mode_diff("notify", "blocked: " + " ".join(blocking)[:200], x, y)
        for c in writer:  # (leave no transaction open)
            c.call("DISCARD")
        return blocking + ["/"] + other, name
    def run_tracking(self, args):
        opts, redirect, acts = args
        tracker, writer = self.open_pair(), self.open_pair()
        sink = tracker
        redir = []
        if self.proto == 2 and redirect:
            sink = self.open_pair()
            for c in sink:
                c.call("SUBSCRIBE", "__redis__:invalidate")
            redir = [["REDIRECT", str(parse(c.call("CLIENT", "ID")))] for c in sink]
        got = [c.call(*(["CLIENT", "TRACKING", "ON"] + opts + (redir[i] if redir else [])))
               for i, c in enumerate(tracker)]
        if got[0] != got[1]:
            self.mode_diff("tracking", "CLIENT TRACKING ON %s" % " ".join(opts), *got)
        in_multi = False  # (the tracking client's PING would be queued: no drain then)
        for act in acts:
            who, cmd = act[0], [a.encode("latin-1") for a in act[1:]]
            what = "%s %s (tracking %s)" % (who, b" ".join(cmd)[:200], " ".join(opts))
            conn = writer if who == "write" else tracker
            low = cmd[0].lower()
            if conn is sink and (in_multi or low == b"multi"):
                got = [sort_push_runs(to_reply(c, cmd)) for c in conn]
            elif conn is sink:
                for c in conn:
                    c.send_raw(encode(cmd))
                got = [sort_push_runs(g) for g in self.drain(sink)]
            else:
                got = [c.call(*cmd) for c in conn]
                if got[0] != got[1]:
                    self.mode_diff("tracking", what + " (reply)", *got)
                got = [sort_push_runs(g) for g in self.drain(sink)] if not (
                    in_multi and sink is tracker) else got
            if got[0] != got[1]:
                self.mode_diff("tracking", what, *got)
            if conn is tracker:
                in_multi = low == b"multi" or (in_multi and low not in (b"exec", b"discard"))

    def run_watch(self, args):
        watched, name, cmd = args
        watcher, writer = self.open_pair(), self.open_pair()
        got = [c.call("WATCH", *watched) for c in watcher]
        a, b = (c.call(*[x.encode("latin-1") for x in cmd]) for c in writer)
        if not self.judge(name, cmd, a, b):
            self.mode_diff("watched", "writer: " + " ".join(cmd)[:200], a, b)
        got = [c.pipeline([["MULTI"], ["PING"], ["EXEC"]])[2] for c in watcher]
        if got[0] != got[1]:
            self.mode_diff("watched", "WATCH %s / %s / EXEC" % (" ".join(watched),
                                                           " ".join(cmd)[:200]), *got)

    def run_monitor(self, cmds):
        mon, writer = self.open_pair(), self.open_pair()
        for c in mon:
            c.call("MONITOR")
        for cmd in cmds:
            block = cmd if isinstance(cmd[0], list) else [cmd]
            got = [c.pipeline([[a.encode("latin-1") for a in x] for x in block])
                   for c in writer]
            cmd = [" ".join(x) for x in block] if block is cmd else cmd
            if got[0] != got[1] and cmd[0] not in ("AUTH", "HELLO"):
                self.mode_diff("monitor", "writer: " + " ".join(cmd)[:200], *got)
            got = [[monitor_line(f) for f in g] for g in self.drain(mon, via=writer)]
            if got[0] != got[1]:
                self.mode_diff("monitor", " ".join(cmd)[:200], *got)

    def run_lua(self, args):
        """The inner command's rule when the body returns its reply, "type" when it
        returns something made of a loosely compared reply."""
        inner, cmd = args[0], args[1:]
        self.sent -= 1
        nested = inner.startswith("nested:")
        inner = inner.split(":", 1)[-1]
        rule = self.rules.get(inner) or self.rules.get(inner.split("|")[0])
        self.send("eval", cmd, rule="type" if rule and nested else rule)


# kind -> (Generator method, Runner method)
MODES = {
    "inline": ("inline_step", "run_inline"),
    "reply": ("reply_step", "run_reply"),
    "subscribe": ("subscribe_step", "run_subscribe"),
    "notify": ("notify_step", "run_notify"),
    "tracking": ("tracking_step", "run_tracking"),
    "monitor": ("monitor_step", "run_monitor"),
    "lua": ("lua_step", "run_lua"),
    # (not "watch": a kind's name must be no command's, as a --log line holds either)
    "watched": ("watch_step", "run_watch"),
}
