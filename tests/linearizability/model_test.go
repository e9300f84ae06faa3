package main

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func op(client int, in Input, call int64, out Output, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func check(t *testing.T, h []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return porcupine.CheckOperationsTimeout(Model, h, 10*time.Second)
}

// The checker accepts what a correct server may answer under concurrency.
func TestLegalHistories(t *testing.T) {
	set := Input{Op: "set", Key: "a", Arg: "5"}
	get := Input{Op: "get", Key: "a"}
	incr := Input{Op: "incr", Key: "a"}
	h := []porcupine.Operation{
		op(0, set, 0, Output{Kind: 'o'}, 10),
		// Concurrent with the SET: either order is fine.
		op(1, get, 1, Output{Kind: 'n'}, 5),
		op(2, incr, 11, Output{Kind: 'i', Int: 6}, 20),
		op(1, Input{Op: "append", Key: "a", Arg: "x"}, 21, Output{Kind: 'i', Int: 2}, 30),
		op(2, incr, 31, Output{Kind: 'e', Str: errNotInt}, 40),
		op(0, Input{Op: "setget", Key: "a", Arg: "1"}, 41, Output{Kind: 's', Str: "6x"}, 50),
		op(0, Input{Op: "del", Key: "a"}, 51, Output{Kind: 'i', Int: 1}, 60),
		op(1, Input{Op: "get", Key: "b"}, 0, Output{Kind: 'n'}, 60),
		// Two concurrent compare-and-sets from the same value: one wins.
		op(0, Input{Op: "set", Key: "c", Arg: "1"}, 0, Output{Kind: 'o'}, 10),
		op(1, Input{Op: "cas", Key: "c", Expect: "1", Arg: "2"}, 20, Output{Kind: 'i', Int: 0}, 40),
		op(2, Input{Op: "cas", Key: "c", Expect: "1", Arg: "3"}, 21, Output{Kind: 'i', Int: 1}, 41),
		op(2, Input{Op: "get", Key: "c"}, 50, Output{Kind: 's', Str: "3"}, 60),
		op(1, Input{Op: "cas", Key: "d", Expect: "", Arg: "1"}, 0, Output{Kind: 'i', Int: 0}, 5),
	}
	if r := check(t, h); r != porcupine.Ok {
		t.Fatalf("legal history judged %v", r)
	}
}

// The checker refuses a stale read, a lost increment and a wrong SET ... GET.
func TestIllegalHistories(t *testing.T) {
	set := func(v string) Input { return Input{Op: "set", Key: "a", Arg: v} }
	get := Input{Op: "get", Key: "a"}
	incr := Input{Op: "incr", Key: "a"}
	cases := map[string][]porcupine.Operation{
		"stale read": {
			op(0, set("1"), 0, Output{Kind: 'o'}, 10),
			op(0, set("2"), 11, Output{Kind: 'o'}, 20),
			op(1, get, 21, Output{Kind: 's', Str: "1"}, 30),
		},
		"lost increment": {
			op(0, incr, 0, Output{Kind: 'i', Int: 1}, 10),
			op(1, incr, 5, Output{Kind: 'i', Int: 1}, 15),
		},
		"read before write finished, then older value": {
			op(0, set("1"), 0, Output{Kind: 'o'}, 100),
			op(1, get, 10, Output{Kind: 's', Str: "1"}, 20),
			op(2, get, 30, Output{Kind: 'n'}, 40),
		},
		"setget old value": {
			op(0, set("1"), 0, Output{Kind: 'o'}, 10),
			op(1, Input{Op: "setget", Key: "a", Arg: "2"}, 20, Output{Kind: 'n'}, 30),
		},
		"two compare-and-sets won from the same value": {
			op(0, set("1"), 0, Output{Kind: 'o'}, 10),
			op(1, Input{Op: "cas", Key: "a", Expect: "1", Arg: "2"}, 20, Output{Kind: 'i', Int: 1}, 40),
			op(2, Input{Op: "cas", Key: "a", Expect: "1", Arg: "3"}, 21, Output{Kind: 'i', Int: 1}, 41),
		},
		"compare-and-set lost although the value matched": {
			op(0, set("1"), 0, Output{Kind: 'o'}, 10),
			op(1, Input{Op: "cas", Key: "a", Expect: "1", Arg: "2"}, 20, Output{Kind: 'i', Int: 0}, 30),
		},
	}
	for name, h := range cases {
		if r := check(t, h); r != porcupine.Illegal {
			t.Errorf("%s: judged %v", name, r)
		}
	}
}

func TestRedisInt(t *testing.T) {
	for s, ok := range map[string]bool{"0": true, "-5": true, "007": false, "+1": false, "": false,
		"9223372036854775807": true, "9223372036854775808": false, " 1": false} {
		if _, got := redisInt(s); got != ok {
			t.Errorf("%q: %v", s, got)
		}
	}
}
