"""Raw RESP replies as trees that keep every byte: a node is (header, children).

Used to compare replies byte for byte except where Redis's order comes from a hash table
and so changes from one process to the next (the subcommands in COMMAND INFO and COMMAND
DOCS): `canon_info` / `canon_docs` sort those, and may keep only the subcommands named in
`keep` (Skein lists only the subcommands it implements)."""


def tree(raw, pos=0):
    """Parse the reply at `pos`; return (node, next position)."""
    eol = raw.index(b"\r\n", pos)
    head = raw[pos:eol + 2]
    t = raw[pos:pos + 1]
    nxt = eol + 2
    if t in (b"$", b"=", b"!"):
        n = int(raw[pos + 1:eol])
        if n < 0:
            return (head, None), nxt
        return (head + raw[nxt:nxt + n + 2], None), nxt + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(raw[pos + 1:eol])
        if n < 0:
            return (head, None), nxt
        if t in (b"%", b"|"):
            n *= 2
        kids = []
        for _ in range(n):
            k, nxt = tree(raw, nxt)
            kids.append(k)
        return (head, kids), nxt
    return (head, None), nxt


def parse_tree(raw):
    node, end = tree(raw, 0)
    assert end == len(raw), "trailing bytes"
    return node


def dump(node):
    head, kids = node
    if kids is None:
        return head
    return head + b"".join(dump(k) for k in kids)


def payload(node):
    """The text of a bulk, verbatim or simple-string node."""
    head = node[0]
    if head[:1] in (b"$", b"="):
        body = head[head.index(b"\r\n") + 2:-2]
        return body[4:] if head[:1] == b"=" else body
    return head[1:-2]


def rebuild(node, kids):
    """`node` with new children (its count fixed)."""
    t = node[0][:1]
    n = len(kids) // 2 if t in (b"%", b"|") else len(kids)
    return (t + str(n).encode() + b"\r\n", kids)


def canon_info(node, keep=None):
    """A COMMAND INFO entry with its subcommands sorted (and filtered by `keep`)."""
    head, kids = node
    if kids is None or len(kids) != 10:
        return node
    subs = kids[9]
    if subs[1]:
        entries = [canon_info(s) for s in subs[1]]
        if keep is not None:
            entries = [e for e in entries if payload(e[1][0]) in keep]
        entries.sort(key=dump)
        subs = rebuild(subs, entries)
    return (head, kids[:9] + [subs])


def canon_docs_entry(node, keep=None):
    """One command's COMMAND DOCS map with its subcommands map sorted (and filtered)."""
    head, kids = node
    out = []
    for i in range(0, len(kids), 2):
        k, v = kids[i], kids[i + 1]
        if payload(k) == b"subcommands":
            ps = [(kids_k, canon_docs_entry(kids_v))
                  for kids_k, kids_v in zip(v[1][0::2], v[1][1::2])]
            if keep is not None:
                ps = [p for p in ps if payload(p[0]) in keep]
            ps.sort(key=lambda p: dump(p[0]))
            v = rebuild(v, [x for p in ps for x in p])
        out += [k, v]
    return (head, out)


def canon_docs(node, keep=None):
    """A COMMAND DOCS reply (map of name -> docs), each entry canonicalized."""
    head, kids = node
    out = []
    for i in range(0, len(kids), 2):
        out += [kids[i], canon_docs_entry(kids[i + 1], keep)]
    return (head, out)
