//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netcode-go/netcode/bench"
	"github.com/netcode-go/netcode/engine"
)

// The server child: netbench re-executes itself with -server-child to run
// the server in its own process (own core, own GC, own allocation
// and CPU accounting). The parent passes the key and protocol id in the
// environment and drives the child over its stdin with one command per
// line; the child answers each with one JSON line on stdout:
//
//	(start)  -> {"addr": "127.0.0.1:40000"}
//	begin    -> {}                       start of a measurement window
//	mark     -> {}                       the load starts, then stops, sending (-reliable)
//	end      -> {"window": {...}}        the window's bench.ServerWindow
//	(EOF)    -> the child stops its server and exits
const (
	envKey      = "NETBENCH_KEY"
	envProtocol = "NETBENCH_PROTOCOL"
)

type childReply struct {
	Addr string `json:"addr,omitempty"`
	// WTAddr and WTHash are the WebTransport listener's address and its
	// certificate's SHA-256 in hex (-webtransport).
	WTAddr string              `json:"wt_addr,omitempty"`
	WTHash string              `json:"wt_hash,omitempty"`
	Window *bench.ServerWindow `json:"window,omitempty"`
	Err    string              `json:"err,omitempty"`
}

// emptyReply is {} as the child writes it without allocating.
var emptyReply = []byte("{}\n")

// serverChild is the parent's handle on the child.
type serverChild struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	dec  *json.Decoder
	addr netip.AddrPort
	// wtAddr and wtHash: the WebTransport listener (-webtransport).
	wtAddr netip.AddrPort
	wtHash [32]byte
}

func startChild(o *options, cpus []int) (*serverChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	args := []string{"-server-child", "-mode", o.mode, "-bare=" + strconv.FormatBool(o.bare), "-reliable=" + strconv.FormatBool(o.reliable),
		"-tick", strconv.FormatFloat(o.tickHz, 'g', -1, 64), "-size", strconv.Itoa(o.size),
		"-sweep=" + strconv.FormatBool(o.sweep), "-max-clients", strconv.Itoa(o.maxClients),
		"-clients", strconv.Itoa(o.clients), "-recv", o.recv, "-batch", strconv.Itoa(o.batch),
		"-shards", strconv.Itoa(o.shards), "-ipv6=" + strconv.FormatBool(o.ipv6), "-gso=" + strconv.FormatBool(o.gso),
		"-decrypt-rate", strconv.Itoa(o.decryptRate), "-no-shed=" + strconv.FormatBool(o.noShed),
		"-flood-kind", o.floodKind, "-source-limit", o.sourceLimit,
		"-source-rate", strconv.Itoa(o.sourceRate), "-source-burst", strconv.Itoa(o.sourceBurst),
		"-server-ip", o.serverIP, "-xdp", o.xdp, "-xdp-if", o.xdpIf,
		"-webtransport", strconv.Itoa(o.webTransport)}
	if len(cpus) > 0 {
		args = append(args, "-server-cpus", joinInts(cpus))
	}
	if o.cpuProfile != "" {
		args = append(args, "-cpuprofile", o.cpuProfile)
	}
	if o.tracePath != "" {
		args = append(args, "-trace", o.tracePath)
	}
	cmd := exec.Command(exe, args...)
	if o.serverNetns != "" {
		// The testbed: the child is the same process image, started in
		// the server's namespace; its stdin and stdout pipes work across.
		cmd = exec.Command("ip", append([]string{"netns", "exec", o.serverNetns, exe}, args...)...)
	}
	if o.noBPF && o.serverNetns != "" {
		return nil, errors.New("-no-bpf and -server-netns: not together (both wrap the child)")
	}
	if o.noBPF {
		// Root without these capabilities cannot load eBPF (with
		// kernel.unprivileged_bpf_disabled set, the default); it keeps
		// CAP_NET_ADMIN, so the socket buffers are the same.
		cmd = exec.Command("setpriv", append([]string{"--bounding-set=-bpf,-perfmon,-sys_admin", "--inh-caps=-bpf,-perfmon,-sys_admin", "--", exe}, args...)...)
	}
	cmd.Env = append(os.Environ(),
		envKey+"="+hex.EncodeToString(o.key),
		envProtocol+"="+strconv.FormatUint(o.protocolID, 16))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server child: %w", err)
	}
	c := &serverChild{cmd: cmd, in: in, dec: json.NewDecoder(out)}
	r, err := c.reply()
	if err == nil {
		c.addr, err = netip.ParseAddrPort(r.Addr)
	}
	if err == nil && o.webTransport > 0 {
		if c.wtAddr, err = netip.ParseAddrPort(r.WTAddr); err == nil {
			var h []byte
			if h, err = hex.DecodeString(r.WTHash); err == nil && len(h) != len(c.wtHash) {
				err = fmt.Errorf("certificate hash %q", r.WTHash)
			}
			copy(c.wtHash[:], h)
		}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("server child: %w", err)
	}
	return c, nil
}

func (c *serverChild) reply() (*childReply, error) {
	var r childReply
	if err := c.dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("read from server child: %w", err)
	}
	if r.Err != "" {
		return nil, errors.New(r.Err)
	}
	return &r, nil
}

func (c *serverChild) command(cmd string) (*childReply, error) {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return nil, fmt.Errorf("write to server child: %w", err)
	}
	return c.reply()
}

// Begin starts a measurement window in the child.
func (c *serverChild) Begin() error {
	_, err := c.command("begin")
	return err
}

// Mark tells the child that the load starts or stops sending.
func (c *serverChild) Mark() error {
	_, err := c.command("mark")
	return err
}

// Stop tells the child that the load has sent its last datagram: the
// window's CPU time and rates end here, its game counts after the drain.
func (c *serverChild) Stop() error {
	_, err := c.command("stop")
	return err
}

// End ends the window and returns what the child measured.
func (c *serverChild) End() (*bench.ServerWindow, error) {
	r, err := c.command("end")
	if err != nil {
		return nil, err
	}
	if r.Window == nil {
		return nil, errors.New("server child sent no window")
	}
	return r.Window, nil
}

// Close tells the child to stop and waits for it (killing it after 5 s).
func (c *serverChild) Close() error {
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		return <-done
	}
}

// runServerChild is the child's main.
func runServerChild(o *options) error {
	enc := json.NewEncoder(os.Stdout)
	fail := func(err error) error {
		_ = enc.Encode(childReply{Err: err.Error()})
		return err
	}
	if o.serverCPUs != "" {
		cpus, err := parseInts(o.serverCPUs)
		if err != nil {
			return fail(err)
		}
		if err := pinProcess(cpus, 0); err != nil {
			return fail(err)
		}
	}
	var err error
	if o.key, err = hex.DecodeString(os.Getenv(envKey)); err != nil {
		return fail(fmt.Errorf("%s: %w", envKey, err))
	}
	if o.protocolID, err = strconv.ParseUint(os.Getenv(envProtocol), 16, 64); err != nil {
		return fail(fmt.Errorf("%s: %w", envProtocol, err))
	}
	addr := netip.MustParseAddrPort("127.0.0.1:0")
	if o.ipv6 {
		addr = netip.MustParseAddrPort("[::1]:0")
	}
	if o.serverIP != "" {
		a, err := netip.ParseAddr(o.serverIP)
		if err != nil {
			return fail(err)
		}
		addr = netip.AddrPortFrom(a, 0)
	}
	srv, err := startServer(o, addr)
	if err != nil {
		return fail(err)
	}
	defer srv.close()
	hello := childReply{Addr: srv.addr.String()}
	if srv.wt != nil {
		h := srv.wt.CertificateHash()
		hello.WTAddr, hello.WTHash = srv.wt.LocalAddr().String(), hex.EncodeToString(h[:])
	}
	if err := enc.Encode(hello); err != nil {
		return err
	}
	var begin, stop mark
	stopped := false
	m := new(meter)
	// The reliable endpoints' marks, read outside the window's
	// allocation count (before its first mark, after its last).
	var relSrv *engine.Server
	if e, ok := srv.app.(interface{ Server() *engine.Server }); ok && o.reliable {
		relSrv = e.Server()
	}
	var relBegin, relEnd bench.ReliableMark
	var xdpBegin map[string]uint64    // the AF_XDP path's counters at the window's begin
	var relSend [2]bench.ReliableMark // at the marks: the packets the app sent
	marks := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		// Compared as bytes: converting to a string would count one
		// allocation against the server's measurement window.
		switch string(bytes.TrimSpace(sc.Bytes())) {
		case "begin":
			// Reply first: encoding allocates, and the window must hold
			// only the server's own allocations.
			err = enc.Encode(childReply{})
			if t, ok := srv.app.(ticker); ok {
				t.TakeTicks() // start the window's tick durations afresh
			}
			if relSrv != nil {
				relBegin.ReadServer(relSrv)
			}
			marks = 0
			stopped = false
			xdpBegin = connCounters(srv.xdp, srv.xdpIf)
			begin = m.take(srv.app, true)
		case "mark":
			// Inside the window: read first, and answer without encoding,
			// which would allocate.
			if relSrv != nil && marks < len(relSend) {
				c := srv.app.Counters()
				relSend[marks] = bench.ReliableMark{Sent: c.Echoed + c.Snapshots, Datagrams: c.PacketsOut}
				marks++
			}
			_, err = os.Stdout.Write(emptyReply)
		case "stop":
			stop, stopped = m.take(srv.app, false), true
			_, err = os.Stdout.Write(emptyReply)
		case "end":
			end := m.take(srv.app, false)
			cpuEnd := &end
			if stopped {
				cpuEnd = &stop
			}
			w := serverWindow(&begin, cpuEnd, &end)
			w.XDP = counterDelta(xdpBegin, connCounters(srv.xdp, srv.xdpIf))
			if relSrv != nil {
				relEnd.ReadServer(relSrv)
				sb, se := &relBegin, &relEnd // no marks: lead and drain's keep-alives count too
				if marks == len(relSend) {
					sb, se = &relSend[0], &relSend[1]
				}
				w.Reliable = bench.WindowFigures(&relBegin, sb, se, &relEnd)
			}
			w.ReceiveMode, w.Batch = srv.mode, srv.batch
			w.GOMAXPROCS = runtime.GOMAXPROCS(0)
			w.CPUs, _ = parseInts(o.serverCPUs)
			w.DropReasons = srv.app.DropReasons()
			if srv.wt != nil {
				w.DropReasons = addWebTransportDrops(w.DropReasons, srv.wt.TransportStats())
			}
			if t, ok := srv.app.(ticker); ok {
				if p, n := t.TakeTicks(); n > 0 {
					w.TickUs = &p
				}
			}
			err = enc.Encode(childReply{Window: w})
		default:
			err = enc.Encode(childReply{Err: fmt.Sprintf("unknown command %q", sc.Text())})
		}
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// mark is a process's counters at one instant.
type mark struct {
	at      time.Time
	cpu     int64
	wait    int64 // runDelay
	mallocs uint64
	gc      uint32
	c       bench.ServerCounters
}

// meter takes marks without allocating between the heap count and the
// rest: its buffers are made once, and a window's first mark reads the
// heap count last and its last mark reads it first, so the marks' own
// work (reading counters, the clock) falls outside the window.
type meter struct {
	ms runtime.MemStats
	ru unix.Rusage
}

func (m *meter) take(e app, begin bool) mark {
	var k mark
	heap := func() {
		runtime.ReadMemStats(&m.ms)
		k.mallocs, k.gc = m.ms.Mallocs, m.ms.NumGC
	}
	if !begin {
		heap()
	}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &m.ru)
	k.cpu = m.ru.Utime.Nano() + m.ru.Stime.Nano()
	k.wait = runDelay()
	k.c = e.Counters()
	k.at = time.Now()
	if begin {
		heap()
	}
	return k
}

// serverWindow is the window from b: its time, CPU, datagrams and drops
// to c (the load's last send), what the game counted to e (after the
// drain, whose replies it takes). A window with no stop (a handshake
// run) passes the same mark as both.
func serverWindow(b, c, e *mark) *bench.ServerWindow {
	return &bench.ServerWindow{
		WindowS:      c.at.Sub(b.at).Seconds(),
		PacketsIn:    c.c.PacketsIn - b.c.PacketsIn,
		PacketsOut:   c.c.PacketsOut - b.c.PacketsOut,
		CPUNanos:     c.cpu - b.cpu,
		WaitNanos:    waitDelta(b.wait, c.wait),
		Mallocs:      c.mallocs - b.mallocs,
		GCCycles:     c.gc - b.gc,
		Connects:     c.c.Connects - b.c.Connects,
		RecvCalls:    c.c.RecvCalls - b.c.RecvCalls,
		SendCalls:    c.c.SendCalls - b.c.SendCalls,
		Parks:        c.c.Parks - b.c.Parks,
		Dropped:      c.c.Dropped - b.c.Dropped,
		KernelDrops:  uint64(uint32(c.c.KernelDrops - b.c.KernelDrops)), // the kernel's count is 32 bits
		Echoed:       e.c.Echoed - b.c.Echoed,
		Connected:    e.c.Connected,
		Inputs:       e.c.Inputs - b.c.Inputs,
		Snapshots:    e.c.Snapshots - b.c.Snapshots,
		Ticks:        e.c.Ticks - b.c.Ticks,
		TicksSkipped: e.c.TicksSkipped - b.c.TicksSkipped,
	}
}

// waitDelta is the run delay between two readings, or -1 if either is
// unknown.
func waitDelta(b, e int64) int64 {
	if b < 0 || e < 0 {
		return -1
	}
	return e - b
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var v []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		v = append(v, x)
	}
	return v, nil
}
