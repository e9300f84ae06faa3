// Command linearizability runs a concurrent register workload (GET, SET, SET...GET, INCR,
// APPEND, DEL on a few keys) against a Redis-protocol server, records when each operation
// was invoked and when it returned, and checks the history with porcupine. It exits 0 if
// the history is linearizable, 1 if it is not, 2 on any other failure (connection errors,
// unexpected replies, a check that timed out).
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

type config struct {
	addr      string
	clients   int
	ops       int
	keys      int
	seed      int64
	prefix    string
	checkTime time.Duration
	viz       string
}

func main() {
	cfg := config{}
	defAddr := os.Getenv("SKEIN_ADDR")
	if defAddr == "" {
		defAddr = "127.0.0.1:6379"
	}
	flag.StringVar(&cfg.addr, "addr", defAddr, "server address host:port (default $SKEIN_ADDR)")
	flag.IntVar(&cfg.clients, "clients", 32, "concurrent clients, one connection each")
	flag.IntVar(&cfg.ops, "ops", 4000, "operations in total")
	flag.IntVar(&cfg.keys, "keys", 4, "keys the clients share")
	flag.Int64Var(&cfg.seed, "seed", 1, "random seed of the workload")
	flag.StringVar(&cfg.prefix, "prefix", "lin:", "key name prefix")
	flag.DurationVar(&cfg.checkTime, "check-timeout", 60*time.Second, "time limit of the check")
	flag.StringVar(&cfg.viz, "viz", "", "write an HTML visualization of the history here")
	flag.Parse()
	os.Exit(run(cfg))
}

func run(cfg config) int {
	history, err := record(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "linearizability:", err)
		return 2
	}
	res, info := porcupine.CheckOperationsVerbose(Model, history, cfg.checkTime)
	if cfg.viz != "" {
		if err := porcupine.VisualizePath(Model, info, cfg.viz); err != nil {
			fmt.Fprintln(os.Stderr, "linearizability: visualization:", err)
		}
	}
	switch res {
	case porcupine.Ok:
		fmt.Printf("linearizable: %d operations, %d clients, %d keys\n", len(history), cfg.clients, cfg.keys)
		return 0
	case porcupine.Illegal:
		fmt.Printf("NOT linearizable: %d operations, %d clients, %d keys", len(history), cfg.clients, cfg.keys)
		if cfg.viz != "" {
			fmt.Printf(" (see %s)", cfg.viz)
		}
		fmt.Println()
		return 1
	default:
		fmt.Printf("check timed out after %s (%d operations)\n", cfg.checkTime, len(history))
		return 2
	}
}

// record runs the workload and returns its history.
func record(cfg config) ([]porcupine.Operation, error) {
	keys := make([]string, cfg.keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", cfg.prefix, i)
	}
	setup, err := Dial(cfg.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	args := append([]string{"DEL"}, keys...)
	if _, err := setup.Do(args...); err != nil {
		return nil, err
	}
	setup.Close()

	conns := make([]*Conn, cfg.clients)
	for i := range conns {
		if conns[i], err = Dial(cfg.addr, 5*time.Second); err != nil {
			return nil, err
		}
		defer conns[i].Close()
	}
	start := time.Now()
	histories := make([][]porcupine.Operation, cfg.clients)
	errs := make([]error, cfg.clients)
	var wg sync.WaitGroup
	for id := 0; id < cfg.clients; id++ {
		n := cfg.ops / cfg.clients
		if id < cfg.ops%cfg.clients {
			n++
		}
		wg.Add(1)
		go func(id, n int) {
			defer wg.Done()
			histories[id], errs[id] = client(conns[id], id, n, keys, cfg.seed, start)
		}(id, n)
	}
	wg.Wait()
	var all []porcupine.Operation
	for id := range histories {
		if errs[id] != nil {
			return nil, fmt.Errorf("client %d: %w", id, errs[id])
		}
		all = append(all, histories[id]...)
	}
	return all, nil
}

// pick chooses an operation with the workload's weights.
func pick(r *rand.Rand, id, seq int, keys []string) Input {
	in := Input{Key: keys[r.Intn(len(keys))]}
	switch p := r.Intn(100); {
	case p < 35:
		in.Op = "get"
	case p < 55:
		in.Op, in.Arg = "set", fmt.Sprint(id*100000+seq+1)
	case p < 65:
		in.Op, in.Arg = "setget", fmt.Sprint(id*100000+seq+1)
	case p < 85:
		in.Op = "incr"
	case p < 95:
		in.Op, in.Arg = "append", fmt.Sprint(r.Intn(10))
	default:
		in.Op = "del"
	}
	return in
}

func command(in Input) []string {
	switch in.Op {
	case "get":
		return []string{"GET", in.Key}
	case "set":
		return []string{"SET", in.Key, in.Arg}
	case "setget":
		return []string{"SET", in.Key, in.Arg, "GET"}
	case "incr":
		return []string{"INCR", in.Key}
	case "append":
		return []string{"APPEND", in.Key, in.Arg}
	default:
		return []string{"DEL", in.Key}
	}
}

// toOutput reduces a reply to the model's Output; a reply of the wrong shape is an error.
func toOutput(in Input, r Reply) (Output, error) {
	switch {
	case r.Kind == '-':
		return Output{Kind: 'e', Str: r.Str}, nil
	case r.Kind == 'n' && (in.Op == "get" || in.Op == "setget"):
		return Output{Kind: 'n'}, nil
	case r.Kind == '$' && (in.Op == "get" || in.Op == "setget"):
		return Output{Kind: 's', Str: r.Str}, nil
	case r.Kind == '+' && r.Str == "OK" && in.Op == "set":
		return Output{Kind: 'o'}, nil
	case r.Kind == ':' && (in.Op == "incr" || in.Op == "append" || in.Op == "del"):
		return Output{Kind: 'i', Int: r.Int}, nil
	}
	return Output{}, fmt.Errorf("unexpected reply %+v to %v", r, command(in))
}

func client(c *Conn, id, n int, keys []string, seed int64, start time.Time) ([]porcupine.Operation, error) {
	r := rand.New(rand.NewSource(seed*1000003 + int64(id)))
	ops := make([]porcupine.Operation, 0, n)
	for seq := 0; seq < n; seq++ {
		in := pick(r, id, seq, keys)
		call := time.Since(start).Nanoseconds()
		reply, err := c.Do(command(in)...)
		ret := time.Since(start).Nanoseconds()
		if err != nil {
			return nil, err
		}
		out, err := toOutput(in, reply)
		if err != nil {
			return nil, err
		}
		ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
	}
	return ops, nil
}
