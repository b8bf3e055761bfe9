// Command fleet is what scripts/fleet.sh runs: a fleet of netcode-server
// processes behind one netcode-token serve token service that picks
// servers by health (-health-servers over their /readyz and /metrics),
// and several hundred engine.Clients, each with its own bearer secret,
// that get connect tokens over HTTP and play. Mid-run the busiest server
// is killed (SIGKILL) and the next busiest drained (SIGTERM); every player
// must come back on a survivor with a fresh token. It prints a timeline
// and a summary and exits 1 when a check failed (a player that never came
// back, a drained player that was not disconnected cleanly, a token that
// still listed a lost server), 2 for a usage error.
//
//	go run ./scripts/fleet -bin DIR [-clients 300] [-servers 3] ...
//
// DIR holds netcode-server and netcode-token binaries. Every flag can
// also be set as FLEET_ and its name upper-cased, dashes as underscores
// (FLEET_CLIENTS=500).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/engine/backend"
)

// options are the flags.
type options struct {
	bin, work string
	clients   int
	servers   int
	timeout   int
	grace     time.Duration
	deadline  time.Duration
	sc        scenario
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(mainErr(ctx, os.Args[1:]))
}

func mainErr(ctx context.Context, args []string) int {
	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()
	start := time.Now()
	fmt.Printf("fleet: %d netcode-server, netcode-token serve -auth bearer -health-servers, %d players at %g Hz; token timeout %d s, drain grace %v\n",
		o.servers, o.clients, o.sc.Rate, o.timeout, o.grace)
	fmt.Println("timeline")
	tl := &timeline{w: os.Stdout, start: start}
	procs, f, err := startFleet(ctx, o, tl)
	defer procs.stop(tl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}
	defer hc.CloseIdleConnections()
	r, err := run(ctx, f, o.sc, hc, os.Stdout, start)
	if r != nil && (err == nil || len(r.failures) > 0) {
		r.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		procs.failed = true
		return 1
	}
	if len(r.failures) > 0 {
		procs.failed = true
		return 1
	}
	return 0
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "", "directory holding the netcode-server and netcode-token binaries (required)")
	fs.StringVar(&o.work, "work", "", "directory for the key, the secrets and the logs (default: a new temporary one, removed at exit)")
	fs.IntVar(&o.clients, "clients", 300, "players, 1 to 5000")
	fs.IntVar(&o.servers, "servers", 3, "netcode-server processes, 3 to 32")
	fs.IntVar(&o.timeout, "timeout", 3, "the tokens' connection timeout in seconds, 2 to 30: how long a killed server's players take to notice")
	fs.DurationVar(&o.grace, "drain-grace", 3*time.Second, "the servers' drain grace: how long a drained server's players play on")
	fs.Float64Var(&o.sc.Rate, "rate", 10, "payloads per second per player")
	fs.DurationVar(&o.sc.Ramp, "ramp", 3*time.Second, "players start spread over this")
	fs.DurationVar(&o.sc.Warmup, "warmup", 5*time.Second, "play before the kill")
	fs.DurationVar(&o.sc.Pause, "pause", 2*time.Second, "play between the kill's recovery and the drain")
	fs.DurationVar(&o.sc.Settle, "settle", 3*time.Second, "play after the drain's recovery")
	fs.Float64Var(&o.sc.Churn, "churn", 10, "players a second that leave and rejoin with a fresh token, from all connected until the drain's recovery (0: none)")
	fs.DurationVar(&o.sc.Recover, "recover", 20*time.Second, "bound on connecting everyone and on each recovery")
	fs.DurationVar(&o.deadline, "deadline", 3*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := "FLEET_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := os.Getenv(env); v != "" && !given[f.Name] && err == nil {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %v", env, v, serr)
			}
		}
	})
	switch {
	case err != nil:
		return nil, err
	case o.bin == "":
		return nil, errors.New("-bin is required: the directory of the netcode-server and netcode-token binaries")
	case o.clients < 1 || o.clients > 5000:
		return nil, fmt.Errorf("-clients %d: allowed 1 to 5000", o.clients)
	case o.servers < 3 || o.servers > 32:
		return nil, fmt.Errorf("-servers %d: allowed 3 to 32 (one killed, one drained, one left)", o.servers)
	case o.timeout < 2 || o.timeout > 30:
		return nil, fmt.Errorf("-timeout %d: allowed 2 to 30 seconds (more than the token service's 1 s health cache)", o.timeout)
	case o.grace < 2*time.Second || o.grace > time.Minute:
		return nil, fmt.Errorf("-drain-grace %v: allowed 2s to 1m (more than the token service's 1 s health cache)", o.grace)
	case o.deadline < 10*time.Second || o.deadline > time.Hour:
		return nil, fmt.Errorf("-deadline %v: allowed 10s to 1h", o.deadline)
	}
	o.sc.Grace = o.grace
	// netcode-token serve's health directory reuses a round of probes for
	// 1 s, and a round takes up to its 1 s probe timeout.
	o.sc.Cache = backend.DefaultHealthCacheFor + backend.DefaultHealthTimeout + 500*time.Millisecond
	return o, o.sc.check()
}
