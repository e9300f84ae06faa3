// Command linearizability runs a concurrent register workload (GET, SET, SET...GET, INCR,
// APPEND, DEL on a few keys; with -cas, GET, SET and a compare-and-set Lua script run by
// EVALSHA)
// against a Redis-protocol server, records when each operation
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
	cas       int
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
	flag.IntVar(&cfg.cas, "cas", 0, "a compare-and-set register workload: the percentage of "+
		"compare-and-set scripts among GET, SET and them (0: GET, SET, SET...GET, INCR, APPEND, DEL)")
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
		fmt.Printf("linearizable: %d operations, %d clients, %d keys", len(history), cfg.clients, cfg.keys)
		if cfg.cas > 0 {
			cas, won := 0, 0
			for _, op := range history {
				if op.Input.(Input).Op == "cas" {
					cas++
					if op.Output.(Output).Int == 1 {
						won++
					}
				}
			}
			fmt.Printf(", %d compare-and-sets (%d set the key)", cas, won)
		}
		fmt.Println()
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
	if cfg.cas > 0 {
		// Loaded once; every client runs it by its SHA (the cache is the server's).
		r, err := setup.Do("SCRIPT", "LOAD", casScript)
		if err != nil {
			return nil, err
		}
		if r.Kind != '$' || r.Str != casSHA {
			return nil, fmt.Errorf("SCRIPT LOAD answered %+v", r)
		}
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
			histories[id], errs[id] = client(conns[id], id, n, keys, cfg, start)
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

// casScript sets KEYS[1] to ARGV[2] if it holds ARGV[1]: 1 if it did, else 0.
const casScript = "if redis.call('get', KEYS[1]) == ARGV[1] then " +
	"redis.call('set', KEYS[1], ARGV[2]) return 1 else return 0 end"

// casSHA is casScript's SHA1.
const casSHA = "74c1f25e84abdfc793797fe07fa066b4815d572c"

// pick chooses an operation with the workload's weights; a compare-and-set expects the
// value this client last saw in the key (`seen`), so that many succeed.
func pick(r *rand.Rand, id, seq int, keys []string, casPct int, seen map[string]string) Input {
	in := Input{Key: keys[r.Intn(len(keys))]}
	if casPct > 0 {
		// A compare-and-set register: reads, writes and compare-and-sets only.
		switch p := r.Intn(100); {
		case p < casPct:
			in.Op, in.Arg, in.Expect = "cas", fmt.Sprint(id*100000+seq+1), seen[in.Key]
		case p < casPct+(100-casPct)*2/3:
			in.Op = "get"
		default:
			in.Op, in.Arg = "set", fmt.Sprint(id*100000+seq+1)
		}
		return in
	}
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
	case "cas":
		return []string{"EVALSHA", casSHA, "1", in.Key, in.Expect, in.Arg}
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
	case r.Kind == ':' && (in.Op == "incr" || in.Op == "append" || in.Op == "del" || in.Op == "cas"):
		return Output{Kind: 'i', Int: r.Int}, nil
	}
	return Output{}, fmt.Errorf("unexpected reply %+v to %v", r, command(in))
}

func client(c *Conn, id, n int, keys []string, cfg config, start time.Time) ([]porcupine.Operation, error) {
	r := rand.New(rand.NewSource(cfg.seed*1000003 + int64(id)))
	ops := make([]porcupine.Operation, 0, n)
	seen := map[string]string{}
	var next *Input
	for seq := 0; seq < n; seq++ {
		var in Input
		switch {
		case next != nil:
			// The compare-and-set that follows its GET: it expects what the GET saw.
			in, next = *next, nil
			in.Expect = seen[in.Key]
		default:
			in = pick(r, id, seq, keys, cfg.cas, seen)
			if in.Op == "cas" && r.Intn(2) == 0 {
				// Half the compare-and-sets read the key first (read-modify-write).
				next, in = &in, Input{Op: "get", Key: in.Key}
			}
		}
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
		switch {
		case out.Kind == 's':
			seen[in.Key] = out.Str
		case out.Kind == 'n':
			delete(seen, in.Key)
		case in.Op == "set" || (in.Op == "cas" && out.Int == 1):
			seen[in.Key] = in.Arg
		}
		ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
	}
	return ops, nil
}
