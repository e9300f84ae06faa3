package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Reply is one decoded RESP2 reply. Kind is '+' (status), '-' (error), ':' (integer),
// '$' (bulk string), 'n' (nil bulk or nil array) or '*' (array).
type Reply struct {
	Kind  byte
	Str   string
	Int   int64
	Items []Reply
}

// Conn is a minimal RESP2 client connection: one command at a time.
type Conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

// Dial connects to a server at addr ("host:port").
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command as a multibulk request and reads its reply.
func (c *Conn) Do(args ...string) (Reply, error) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.w.Flush(); err != nil {
		return Reply{}, err
	}
	return c.read()
}

func (c *Conn) line() (string, error) {
	l, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return "", fmt.Errorf("malformed reply line %q", l)
	}
	return l[:len(l)-2], nil
}

func (c *Conn) read() (Reply, error) {
	l, err := c.line()
	if err != nil {
		return Reply{}, err
	}
	kind, body := l[0], l[1:]
	switch kind {
	case '+', '-':
		return Reply{Kind: kind, Str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return Reply{Kind: kind, Int: n}, err
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			return Reply{Kind: 'n'}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return Reply{}, err
		}
		return Reply{Kind: kind, Str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return Reply{}, err
		}
		if n < 0 {
			return Reply{Kind: 'n'}, nil
		}
		items := make([]Reply, n)
		for i := range items {
			if items[i], err = c.read(); err != nil {
				return Reply{}, err
			}
		}
		return Reply{Kind: kind, Items: items}, nil
	}
	return Reply{}, fmt.Errorf("unexpected reply type %q", kind)
}
