// Command fleet runs a fleet of netcode dedicated servers on loopback with
// a token service in front of them and a crowd of clients that play, then
// kills one server and drains another mid-run and reports how the clients
// came back: a timeline and a summary. It exits 1 if any client never came
// back or a token named a server the directory should have dropped.
//
//	go build -o bin/ ./cmd/netcode-server ./cmd/netcode-token
//	go run ./scripts/fleet -server-bin bin/netcode-server -token-bin bin/netcode-token
//
// scripts/fleet.sh does both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg Config
	flag.StringVar(&cfg.ServerBin, "server-bin", "", "the netcode-server binary (required)")
	flag.StringVar(&cfg.TokenBin, "token-bin", "", "the netcode-token binary (required)")
	flag.IntVar(&cfg.Servers, "servers", 3, "dedicated servers (at least 3: one is killed, one drained)")
	flag.IntVar(&cfg.Clients, "clients", 300, "clients (each with a client id of its own and a socket)")
	flag.IntVar(&cfg.MaxClients, "max-clients", 0, "slots per server (0: enough for every client on the two survivors)")
	flag.Float64Var(&cfg.RateHz, "rate", 10, "payloads per second per client")
	flag.DurationVar(&cfg.KillAt, "kill-at", 8*time.Second, "when the first server gets SIGKILL, after every client connected")
	flag.DurationVar(&cfg.DrainAt, "drain-at", 16*time.Second, "when the second server gets SIGTERM (a drain), after every client connected")
	flag.DurationVar(&cfg.DrainGrace, "drain-grace", 3*time.Second, "the drained server's -drain-grace")
	flag.IntVar(&cfg.TimeoutSeconds, "timeout", 3, "the tokens' connection timeout in seconds (how long a dead server's clients take to notice)")
	flag.DurationVar(&cfg.Settle, "settle", 10*time.Second, "how long after the drain every client has to be back")
	flag.StringVar(&cfg.LogDir, "log-dir", "", "directory for the processes' logs (default: a temporary one, removed unless the run fails)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "fleet: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg, os.Stdout)
	if rep != nil {
		rep.Print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	if problems := rep.Problems(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "fleet: FAIL:", p)
		}
		os.Exit(1)
	}
}
