package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// Input is one operation on one key: op is "get", "set", "setget" (SET k v GET),
// "incr", "append", "del" or "cas" (a compare-and-set script: set the key to arg if it
// holds expect); arg is the value written (set, setget, append, cas).
type Input struct {
	Op     string
	Key    string
	Arg    string
	Expect string
}

// Output is what the server answered, reduced to what the model predicts.
type Output struct {
	Kind byte // 'n' nil, 's' string, 'i' integer, 'e' error, 'o' OK
	Str  string
	Int  int64
}

// State is one key's value: absent, or a string.
type State struct {
	Exists bool
	Val    string
}

const (
	errNotInt   = "ERR value is not an integer or out of range"
	errOverflow = "ERR increment or decrement would overflow"
)

// redisInt parses s as Redis's string2ll does: canonical decimal, no '+', no leading zeros.
func redisInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

func (s State) value() Output {
	if !s.Exists {
		return Output{Kind: 'n'}
	}
	return Output{Kind: 's', Str: s.Val}
}

// step applies in to s: the output a linearizable server must give, and the next state.
func step(s State, in Input) (Output, State) {
	switch in.Op {
	case "get":
		return s.value(), s
	case "set":
		return Output{Kind: 'o'}, State{true, in.Arg}
	case "setget":
		return s.value(), State{true, in.Arg}
	case "incr":
		n := int64(0)
		if s.Exists {
			var ok bool
			if n, ok = redisInt(s.Val); !ok {
				return Output{Kind: 'e', Str: errNotInt}, s
			}
		}
		if n == math.MaxInt64 {
			return Output{Kind: 'e', Str: errOverflow}, s
		}
		return Output{Kind: 'i', Int: n + 1}, State{true, strconv.FormatInt(n+1, 10)}
	case "append":
		v := s.Val + in.Arg
		return Output{Kind: 'i', Int: int64(len(v))}, State{true, v}
	case "del":
		if s.Exists {
			return Output{Kind: 'i', Int: 1}, State{}
		}
		return Output{Kind: 'i', Int: 0}, State{}
	case "cas":
		if s.Exists && s.Val == in.Expect {
			return Output{Kind: 'i', Int: 1}, State{true, in.Arg}
		}
		return Output{Kind: 'i', Int: 0}, s
	}
	panic("unknown op " + in.Op)
}

// partitionByKey splits a history into one history per key: keys are independent, so
// the history is linearizable if and only if each key's is.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range history {
		k := op.Input.(Input).Key
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}

// Model is the porcupine model of a set of independent string keys.
var Model = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() interface{} { return State{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		want, next := step(state.(State), input.(Input))
		return want == output.(Output), next
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(Input), output.(Output)
		var res string
		switch out.Kind {
		case 'n':
			res = "nil"
		case 'i':
			res = strconv.FormatInt(out.Int, 10)
		case 'o':
			res = "OK"
		default:
			res = strconv.Quote(out.Str)
		}
		if in.Op == "cas" {
			return fmt.Sprintf("cas(%s %q->%q) -> %s", in.Key, in.Expect, in.Arg, res)
		}
		return fmt.Sprintf("%s(%s %q) -> %s", in.Op, in.Key, in.Arg, res)
	},
	DescribeState: func(state interface{}) string {
		s := state.(State)
		if !s.Exists {
			return "(absent)"
		}
		return strconv.Quote(s.Val)
	},
}
