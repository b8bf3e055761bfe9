//go:build linux

// Command netbench measures a netcode server: it starts an echo server
// (in a child process pinned to its own core) and a load of real netcode
// clients, and reports round-trip latency percentiles, loss, throughput and
// the server's CPU and allocations per packet.
//
//	go run ./cmd/netbench                      # 256 clients, 60 Hz, 100 B, 10 s
//	go run ./cmd/netbench -sweep -json r.json  # highest sustained rate
//	go run ./cmd/netbench -mode game -sweep     # players per core at 60 Hz
//	go run ./cmd/netbench -mode game -sweep -bare  # the same without netcode
//	go run ./cmd/netbench -reliable -size 4000  # acks, RTT, fragments
//	go run ./cmd/netbench -mode handshake      # connections per second
//	go run ./cmd/netbench -mode flood          # bad requests while clients play
//	go run ./cmd/netbench -mode messages -rate 2000 -size 16  # message channels
//	go run ./cmd/netbench -serve 127.0.0.1:40000 -key HEX -protocol HEX
//	go run ./cmd/netbench -target 127.0.0.1:40000 -key HEX -protocol HEX
//	go run ./cmd/netbench -plot runs.svg a.json b.json
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/bench"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// defaultProtocolID is the protocol id when -protocol is not given.
const defaultProtocolID = 0x6e6574626e6368 // "netbnch"

type options struct {
	clients int
	rate    float64
	size    int
	// sizeSet: -size was given (game mode's default differs).
	sizeSet    bool
	tickHz     float64
	inputSize  int
	bare       bool
	reliable   bool
	sample     int
	maxClients int
	duration   time.Duration
	// durationSet: -duration was given (-serve then stops after it).
	durationSet bool
	step        time.Duration
	connect     time.Duration
	shards      int
	batch       int
	recv        string
	ipv6        bool
	jsonPath    string
	hgrmPath    string
	plotPath    string
	keyHex      string
	protoHex    string
	sweep       bool
	retries     int
	mode        string
	serve       string
	target      string
	label       string
	quiet       bool

	child      bool
	serverCPUs string
	cpuProfile string
	tracePath  string

	files         []string // extra arguments: JSON files to plot
	socketsArg    string
	floodPriority string
	floodGSO      bool
	floodAt       string
	decryptRate   int
	noShed        bool
	floodKind     string
	floodSize     int
	sourceLimit   string
	sourceRate    int
	sourceBurst   int
	noBPF         bool
	// The testbed (scripts/testbed.sh): the server child's network
	// namespace and address, and the block of the load's client
	// addresses; xdp is passed through to the server for its AF_XDP path.
	serverNetns  string
	serverIP     string
	clientNet    string
	xdp          string // batchio.ParseXDPMode
	xdpIf        string
	loadXDP      string // the load's shared sockets' path (batchio.ParseXDPMode)
	sendGrid     time.Duration
	loadXDPIf    string
	presealLimit int
	sockets      bench.LoadSockets
	workers      int
	gso          bool
	key          []byte
	protocolID   uint64
	// webTransport is how many of the clients play over WebTransport
	// (browser-like Go clients) against the server's WebTransport
	// listener; the child opens one when it is above 0.
	webTransport int
}

// durationValue is a flag that takes a Go duration ("10s", "1m") or a
// plain number of seconds ("10", "2.5").
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		*v.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 10s or a number of seconds")
	}
	*v.d = d
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{duration: 10 * time.Second, step: 2 * time.Second, connect: 15 * time.Second}
	fs := flag.NewFlagSet("netbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.clients, "clients", 256, "number of clients (each has its own address); with -serve, the server's slots")
	fs.StringVar(&o.socketsArg, "sockets", "auto", "client addresses: shared (a few wildcard sockets, one 127.x.y.z address per client, batched; IPv4 loopback only), per-client (a socket and goroutine per client; any server) or auto (shared when possible)")
	fs.IntVar(&o.workers, "workers", 0, "goroutines driving shared client sockets (0: one per load CPU, at most one per 64 clients)")
	fs.Float64Var(&o.rate, "rate", 60, "payloads per second per client (the starting rate of a -sweep)")
	fs.IntVar(&o.size, "size", 100, fmt.Sprintf("payload bytes (%d to %d, or to %d with -reliable; the first %d carry the send time and sequence); in game mode the snapshot size, default 300", 16, codec.MaxPayloadBytes, maxReliableSize, 16))
	fs.Float64Var(&o.tickHz, "tick", 60, "game mode: the server's tick rate in Hz; clients send an input per tick")
	fs.IntVar(&o.inputSize, "input-size", 64, "game mode: input bytes")
	fs.BoolVar(&o.bare, "bare", false, "the protocol-free control: the same load shape (echo or game) with netcode off on both sides (plain UDP, same stamps, sockets, batching and pacing)")
	fs.BoolVar(&o.reliable, "reliable", false, "reliable 1.0 endpoints on both sides (engine.DefaultReliableConfig): acks, RTT estimates, and payloads above 1,200 bytes sent as fragments; every client then opens every reply (-sample does not apply)")
	fs.IntVar(&o.sample, "sample", 0, "only every N-th client opens and times its replies; the others count them unopened by size and clear sequence (shared sockets; 0: 1 up to 256 clients, else 8)")
	fs.IntVar(&o.maxClients, "max-clients", 8192, "game -sweep: the most players tried (the server's slots)")
	fs.IntVar(&o.retries, "retries", 1, "a failed -sweep step is measured again up to this many times before it counts as failed (on a shared machine one stall of a few ms fails a step)")
	fs.Var(durationValue{&o.duration}, "duration", "measurement time (10s, or seconds)")
	fs.Var(durationValue{&o.step}, "step", "measurement time of each -sweep step")
	fs.Var(durationValue{&o.connect}, "connect-timeout", "how long to wait for all clients to connect")
	fs.IntVar(&o.shards, "shards", 1, "server shards: N runs the engine.Server with N SO_REUSEPORT sockets and shard goroutines; 0 runs it in manual mode (one socket, driven by the application goroutine)")
	fs.IntVar(&o.batch, "batch", 64, "server socket batch size (datagrams per system call, 1 to 1024)")
	fs.StringVar(&o.recv, "recv", "mmsg", "server receive mode: mmsg, block (batchio), xnet or single (bench's comparison sockets)")
	fs.BoolVar(&o.gso, "gso", true, "server sends runs of datagrams to one client with UDP GSO (mmsg and block modes)")
	fs.BoolVar(&o.ipv6, "ipv6", false, "use IPv6 loopback (::1) instead of 127.0.0.1")
	fs.StringVar(&o.jsonPath, "json", "", "write the result as JSON to `FILE`")
	fs.StringVar(&o.hgrmPath, "hgrm", "", "write the latency distribution in HdrHistogram's .hgrm text format to `FILE`")
	fs.StringVar(&o.plotPath, "plot", "", "write a latency-by-percentile chart to `FILE.svg`; with JSON files as arguments, plot those instead of running")
	fs.StringVar(&o.keyHex, "key", "", "32-byte private key as 64 hex digits (default: random; required with -serve and -target)")
	fs.StringVar(&o.protoHex, "protocol", "", fmt.Sprintf("protocol id in hex (default %x)", uint64(defaultProtocolID)))
	fs.BoolVar(&o.sweep, "sweep", false, "raise the offered load step by step until loss > 1% or p99 > 10 ms and report the highest sustained rate; in game mode, raise the players from -clients until snapshot or input loss > 0.1% or p99 > one tick and report the most")
	fs.StringVar(&o.mode, "mode", "echo", "echo (payload round trips), game (ticks and snapshots), handshake (connections per second), flood (bad requests while clients play) or messages (reliable-ordered messages of -size at -rate and an unreliable stream over message channels, in process)")
	fs.BoolVar(&o.noShed, "no-shed", false, "turn off the server's kernel shedding of connection-request floods (engine.ServerConfig.DisableRequestShedding), to measure what it buys")
	fs.IntVar(&o.decryptRate, "decrypt-rate", 0, "server's connect-token decryptions per second per shard (engine.ServerConfig.TokenDecryptsPerSecond; 0: the default, -1: no limit)")
	fs.StringVar(&o.floodAt, "flood-at", "server", "where the flood goes: server, or sink (a socket beside it whose kernel filter drops everything: the same cost to the load's core, none to the server; a control run)")
	fs.BoolVar(&o.floodGSO, "flood-gso", true, "the flooder sends with UDP GSO, several times the requests per second of sendmmsg from one core")
	fs.StringVar(&o.floodPriority, "flood-priority", "idle", "scheduling of the flood thread: idle (SCHED_IDLE: it takes only the CPU time the load generator leaves on its core) or normal (it competes with the load generator)")
	fs.StringVar(&o.floodKind, "flood-kind", "requests", "what the flood sends: requests (forged connection requests) or payload (junk payload packets of -flood-size from a connected player's address, spoofed with a raw socket: IPv4, root)")
	fs.IntVar(&o.floodSize, "flood-size", bench.PayloadFloodBytes, "-flood-kind payload: the datagrams' size in bytes")
	fs.StringVar(&o.sourceLimit, "source-limit", "off", "the server's kernel per-source limit (batchio.SourceLimit): off, on (fail without eBPF) or try (run without it where eBPF is unavailable)")
	fs.IntVar(&o.sourceRate, "source-rate", batchio.DefaultSourceRate, "with -source-limit, the datagrams per second one source may send")
	fs.IntVar(&o.sourceBurst, "source-burst", batchio.DefaultSourceBurst, "with -source-limit, the datagrams one source may send at once")
	fs.BoolVar(&o.noBPF, "no-bpf", false, "start the server child without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (setpriv), so that eBPF cannot load: with -source-limit try, measures the fallback")
	fs.StringVar(&o.serve, "serve", "", "run only the echo server on `ADDR` (host:port) until interrupted, or for -duration if given")
	fs.StringVar(&o.target, "target", "", "load an already running server at `ADDR` instead of starting one")
	fs.StringVar(&o.label, "label", "", "legend label of this run in plots (default: a summary of the configuration)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the load process to `FILE` and of the server child to FILE.server")
	fs.StringVar(&o.tracePath, "trace", "", "write a Go execution trace of the load process to `FILE` and of the server child to FILE.server (go tool trace -pprof=sched FILE.server shows goroutines' waits for a CPU)")
	fs.StringVar(&o.serverNetns, "server-netns", "", "run the server child in network namespace `NS` (ip netns exec; scripts/testbed.sh sets it in $TESTBED_FLAGS)")
	fs.StringVar(&o.serverIP, "server-ip", "", "the server child's address (default the loopback address; on the testbed 198.18.0.1)")
	fs.StringVar(&o.clientNet, "client-net", "", "shared client sockets take their addresses from this IPv4 `PREFIX` (a /8 or /16 routed to the load as local, such as the testbed's 198.19.0.0/16; default 127.0.0.0/8)")
	fs.StringVar(&o.xdp, "xdp", "off", "the server's datagram path: off (sockets), native, generic or try (AF_XDP; Linux, root)")
	fs.StringVar(&o.xdpIf, "xdp-if", "", "the `INTERFACE` the AF_XDP program attaches to (default: the one holding -server-ip)")
	fs.DurationVar(&o.sendGrid, "send-grid", 0, "the load sends in batches: each client's place in the send interval is rounded down to a multiple of this (0: spread evenly, one datagram every interval/clients; at most 10ms)")
	fs.StringVar(&o.loadXDP, "load-xdp", "off", "the load's datagram path: off (sockets), native, generic or try (AF_XDP, one worker on shared sockets; Linux, root)")
	fs.StringVar(&o.loadXDPIf, "load-xdp-if", "", "the `INTERFACE` the load's AF_XDP program attaches to (default: the one on the server's subnet)")
	fs.IntVar(&o.presealLimit, "preseal-limit", bench.DefaultPresealLimit>>20, "MiB the load may hold in inputs and payloads sealed before a window (0: seal while sending, as a game client does)")
	fs.IntVar(&o.webTransport, "webtransport", 0, "`N` of the -clients play as browsers: WebTransport sessions (Go clients) to a WebTransport listener of the same server, the rest over UDP; each group's loss and round-trip percentiles are reported (echo mode; -clients N: all)")
	fs.BoolVar(&o.child, "server-child", false, "internal: run as the server child")
	fs.StringVar(&o.serverCPUs, "server-cpus", "", "internal: CPUs of the server child")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: netbench [flags] [result.json ...]\n\n")
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "server-child" || f.Name == "server-cpus" {
				return // hidden
			}
			name, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(fs.Output(), "  -%s %s\n    \t%s", f.Name, name, usage)
			if f.DefValue != "" && f.DefValue != "false" {
				fmt.Fprintf(fs.Output(), " (default %s)", f.DefValue)
			}
			fmt.Fprintln(fs.Output())
		})
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) {
		o.durationSet = o.durationSet || f.Name == "duration"
		o.sizeSet = o.sizeSet || f.Name == "size"
	})
	if o.mode == "game" && !o.sizeSet {
		o.size = 300
	}
	o.files = fs.Args()
	return o, o.check()
}

// check validates the options and decodes the derived fields.
func (o *options) check() error {
	var err error
	switch o.recv {
	case "mmsg", "block", "xnet", "single":
	default:
		return fmt.Errorf("-recv %q: want mmsg, block, xnet or single", o.recv)
	}
	if o.mode == "game" && !(o.tickHz > 0 && o.tickHz <= bench.MaxTickHz) {
		return fmt.Errorf("-tick %g: want more than 0 and at most %d Hz", o.tickHz, bench.MaxTickHz)
	}
	switch o.sourceLimit {
	case "off", "on", "try":
	default:
		return fmt.Errorf("-source-limit %q: want off, on or try", o.sourceLimit)
	}
	if o.serverIP != "" {
		a, err := netip.ParseAddr(o.serverIP)
		if err != nil {
			return fmt.Errorf("-server-ip %q: want an IP address: %w", o.serverIP, err)
		}
		if a.Is6() != o.ipv6 {
			return fmt.Errorf("-server-ip %v: the family must match -ipv6=%v", a, o.ipv6)
		}
	}
	if _, err := batchio.ParseXDPMode(o.loadXDP); err != nil {
		return fmt.Errorf("-load-xdp: %w", err)
	}
	if _, err := batchio.ParseXDPMode(o.xdp); err != nil {
		return fmt.Errorf("-xdp: %w", err)
	}
	if o.webTransport < 0 || o.webTransport > o.clients {
		return fmt.Errorf("-webtransport %d: want 0 to -clients (%d)", o.webTransport, o.clients)
	}
	if o.child {
		return nil // the key and protocol come from the environment
	}
	if o.presealLimit < 0 || o.presealLimit > 1<<16 {
		return fmt.Errorf("-preseal-limit %d: want 0 (off) to %d MiB", o.presealLimit, 1<<16)
	}
	if o.clientNet != "" {
		if _, err := netip.ParsePrefix(o.clientNet); err != nil {
			return fmt.Errorf("-client-net %q: want an IPv4 prefix such as 198.19.0.0/16: %w", o.clientNet, err)
		}
	}
	if o.serverNetns != "" && o.target != "" {
		return errors.New("-server-netns starts the server child in a namespace; with -target there is none (run the target there yourself)")
	}
	if o.webTransport > 0 && (o.mode != "echo" || o.bare || o.reliable || o.target != "" || o.serve != "") {
		return errors.New("-webtransport works with -mode echo (fixed or -sweep) against netbench's own server: not with -bare, -reliable, -target or -serve")
	}
	if o.sockets, err = bench.ParseLoadSockets(o.socketsArg); err != nil {
		return fmt.Errorf("-sockets: %w", err)
	}
	if o.floodAt != "server" && o.floodAt != "sink" {
		return fmt.Errorf("-flood-at %q: want server or sink", o.floodAt)
	}
	if o.floodKind != "requests" && o.floodKind != "payload" {
		return fmt.Errorf("-flood-kind %q: want requests or payload", o.floodKind)
	}
	if o.floodKind == "payload" && o.ipv6 {
		return errors.New("-flood-kind payload spoofs with a raw IPv4 socket; not with -ipv6")
	}
	if o.floodPriority != "idle" && o.floodPriority != "normal" {
		return fmt.Errorf("-flood-priority %q: want idle or normal", o.floodPriority)
	}
	if o.workers < 0 || o.workers > 64 {
		return fmt.Errorf("-workers %d: want 0 (automatic) to 64", o.workers)
	}
	if len(o.files) > 0 && o.plotPath == "" {
		return fmt.Errorf("unexpected arguments %q: JSON files are only read with -plot", o.files)
	}
	switch o.mode {
	case "echo", "game", "handshake", "flood", "messages":
	default:
		return fmt.Errorf("-mode %q: want echo, game, handshake, flood or messages", o.mode)
	}
	if o.bare && o.mode != "echo" && o.mode != "game" {
		return fmt.Errorf("-bare works with -mode echo or game, not %s", o.mode)
	}
	if o.reliable && o.bare {
		return errors.New("-reliable and -bare exclude each other: the control runs no protocol")
	}
	if o.reliable && o.mode == "handshake" {
		return errors.New("-reliable works with -mode echo, game or flood, not handshake")
	}
	if o.reliable && o.sample > 1 {
		return fmt.Errorf("-sample %d: with -reliable every client opens every reply (acks need every packet); want 0 or 1", o.sample)
	}
	if err := o.checkSize("-input-size", o.inputSize); err != nil {
		return err
	}
	if o.retries < 0 || o.retries > 5 {
		return fmt.Errorf("-retries %d: want 0 to 5", o.retries)
	}
	if o.sample < 0 || o.sample > 1<<16 {
		return fmt.Errorf("-sample %d: want 0 (automatic) to 65536", o.sample)
	}
	if o.mode == "game" && o.sweep && (o.maxClients < o.clients || o.maxClients > 1<<16) {
		return fmt.Errorf("-max-clients %d: want -clients (%d) to 65536", o.maxClients, o.clients)
	}
	if o.sweep && o.mode == "handshake" {
		return errors.New("-sweep works with -mode echo or flood, not handshake")
	}
	if o.clients < 1 || o.clients > 1<<16 {
		return fmt.Errorf("-clients %d: want 1 to 65536", o.clients)
	}
	if o.rate <= 0 || o.rate > 1e6 {
		return fmt.Errorf("-rate %g: want more than 0 and at most 1000000 per client", o.rate)
	}
	if err := o.checkSize("-size", o.size); err != nil {
		return err
	}
	if o.duration <= 0 || o.step <= 0 || o.connect <= 0 {
		return errors.New("-duration, -step and -connect-timeout must be positive")
	}
	if o.batch < 1 || o.batch > 1024 {
		return fmt.Errorf("-batch %d: want 1 to 1024", o.batch)
	}
	if o.shards < 0 || o.shards > 256 {
		return fmt.Errorf("-shards %d: want 0 (single-loop server) to 256", o.shards)
	}
	if o.serve != "" && o.target != "" {
		return errors.New("-serve and -target exclude each other")
	}
	if (o.serve != "" || o.target != "") && !o.bare && (o.keyHex == "" || o.protoHex == "") {
		return errors.New("-serve and -target need -key and -protocol (the server's and the load's must match)")
	}
	if o.keyHex == "" {
		o.key = make([]byte, codec.KeyBytes)
		if _, err := rand.Read(o.key); err != nil {
			return err
		}
	} else if o.key, err = hex.DecodeString(o.keyHex); err != nil || len(o.key) != codec.KeyBytes {
		return fmt.Errorf("-key: want %d hex digits (a %d-byte key)", 2*codec.KeyBytes, codec.KeyBytes)
	}
	o.protocolID = defaultProtocolID
	if o.protoHex != "" {
		s := strings.TrimPrefix(strings.TrimPrefix(o.protoHex, "0x"), "0X")
		if o.protocolID, err = strconv.ParseUint(s, 16, 64); err != nil {
			return fmt.Errorf("-protocol %q: want up to 16 hex digits", o.protoHex)
		}
	}
	return nil
}

// maxReliableSize is the largest payload with -reliable: the endpoints'
// MaxPacketSize.
var maxReliableSize = engine.DefaultReliableConfig().MaxPacketSize

// checkSize checks a payload size flag: 16 to 1200 bytes, or to
// maxReliableSize with -reliable.
func (o *options) checkSize(flag string, n int) error {
	limit := codec.MaxPayloadBytes
	if o.reliable {
		limit = maxReliableSize
	}
	switch {
	case n >= 16 && n <= limit:
		return nil
	case o.reliable:
		return fmt.Errorf("%s %d: want 16 to %d bytes with -reliable", flag, n, limit)
	}
	return fmt.Errorf("%s %d: want 16 to %d bytes (up to %d with -reliable, which sends longer payloads as fragments)", flag, n, limit, maxReliableSize)
}

func main() {
	run()
	os.Exit(exitCode)
}

func run() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		exitCode = 2
		return
	}
	if o.cpuProfile != "" {
		path := o.cpuProfile
		if o.child {
			path += ".server"
		}
		stop, err := startProfile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "netbench:", err)
			exitCode = 1
			return
		}
		defer stop()
	}
	if o.tracePath != "" {
		path := o.tracePath
		if o.child {
			path += ".server"
		}
		stop, err := startTrace(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "netbench:", err)
			exitCode = 1
			return
		}
		defer stop()
	}
	switch {
	case o.child:
		err = runServerChild(o)
	case o.plotPath != "" && len(o.files) > 0:
		err = plotFiles(o.plotPath, o.files)
	case o.mode == "messages":
		err = runMessages(o)
	case o.serve != "":
		err = runServe(o)
	default:
		err = runBench(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		exitCode = 1
	}
}

// exitCode is set by main's deferred-friendly error path: main returns
// normally (running its defers, such as the CPU profile's) and run exits.
var exitCode int

func startTrace(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { trace.Stop(); f.Close() }, nil
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
