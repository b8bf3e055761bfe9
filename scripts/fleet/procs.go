package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/engine/backend"
)

// fleetRateLimit is the token service's per-player rate here: the churn
// has every player rejoin every few seconds, far above the default (one
// token per 10 s, burst 4), which suits real players.
var fleetRateLimit = backend.RateLimit{PerSecond: 1, Burst: 5}

// protocolHex is the fleet's protocol id.
const protocolHex = "f1ee7"

// proc is a child process and its log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // Wait's, once done is closed
}

func startProc(name, logPath string, bin string, args ...string) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s has already exited (%v)", p.name, exitText(p.err))
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// tail is the end of the process's log, for an error message.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// procServer is a netcode-server process.
type procServer struct {
	*proc
	udp  netip.AddrPort
	http string // base URL of its endpoints
}

var _ server = (*procServer)(nil)

func (s *procServer) Name() string          { return s.name }
func (s *procServer) Addr() netip.AddrPort  { return s.udp }
func (s *procServer) Kill() error           { return s.signal(syscall.SIGKILL) }
func (s *procServer) Drain() error          { return s.signal(syscall.SIGTERM) }
func (s *procServer) Done() <-chan struct{} { return s.done }
func (s *procServer) Err() error            { return s.err }

// procs are the children, stopped at exit.
type procs struct {
	list    []*proc
	work    string
	tempDir bool // remove work at exit
	failed  bool
}

// stop ends every child still running: SIGTERM, then SIGKILL after 10 s.
func (ps *procs) stop(tl *timeline) {
	if ps == nil {
		return
	}
	for _, p := range ps.list {
		_ = p.signal(syscall.SIGTERM)
	}
	deadline := time.After(10 * time.Second)
	for _, p := range ps.list {
		select {
		case <-p.done:
		case <-deadline:
			_ = p.signal(syscall.SIGKILL)
			<-p.done
		}
	}
	if ps.work == "" {
		return
	}
	if ps.tempDir && !ps.failed {
		os.RemoveAll(ps.work)
		return
	}
	tl.log("logs in %s", ps.work)
}

// startFleet writes a key and the players' secrets, starts the servers
// and the token service on free loopback ports and waits until they
// answer.
func startFleet(ctx context.Context, o *options, tl *timeline) (*procs, *fleet, error) {
	ps := &procs{work: o.work}
	fail := func(err error) (*procs, *fleet, error) {
		ps.failed = true
		return ps, nil, err
	}
	if ps.work == "" {
		dir, err := os.MkdirTemp("", "netcode-fleet-")
		if err != nil {
			return fail(err)
		}
		ps.work, ps.tempDir = dir, true
	}
	serverBin, tokenBin := filepath.Join(o.bin, "netcode-server"), filepath.Join(o.bin, "netcode-token")
	key := filepath.Join(ps.work, "key")
	os.Remove(key) // keygen refuses to overwrite
	if out, err := exec.CommandContext(ctx, tokenBin, "keygen", "-o", key).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("netcode-token keygen: %v: %s", err, out))
	}
	f := &fleet{ids: newIdentities(o.clients)}
	secrets := filepath.Join(ps.work, "secrets")
	if err := os.WriteFile(secrets, []byte(secretsFile(f.ids)), 0o600); err != nil {
		return fail(err)
	}

	var health []string
	for i := range o.servers {
		udp, err := freePort("udp")
		if err != nil {
			return fail(err)
		}
		tcp, err := freePort("tcp")
		if err != nil {
			return fail(err)
		}
		name := fmt.Sprintf("server-%d", i+1)
		p, err := startProc(name, filepath.Join(ps.work, name+".log"), serverBin,
			"-protocol", protocolHex, "-key-file", key, "-bind", udp.String(), "-http", tcp.String(),
			"-max-clients", fmt.Sprint(max(o.clients, 2)), "-drain-grace", o.grace.String(), "-log-format", "json")
		if err != nil {
			return fail(err)
		}
		ps.list = append(ps.list, p)
		s := &procServer{proc: p, udp: udp, http: "http://" + tcp.String()}
		f.servers = append(f.servers, s)
		health = append(health, s.http+"="+udp.String())
	}
	for _, s := range f.servers {
		s := s.(*procServer)
		if err := waitHTTP(ctx, s.proc, s.http+"/readyz"); err != nil {
			return fail(err)
		}
		tl.log("%s ready: udp %v, http %s (pid %d)", s.name, s.udp, s.http, s.cmd.Process.Pid)
	}

	tcp, err := freePort("tcp")
	if err != nil {
		return fail(err)
	}
	svc, err := startProc("netcode-token", filepath.Join(ps.work, "netcode-token.log"), tokenBin, "serve",
		"-listen", tcp.String(), "-protocol", protocolHex, "-key-file", key,
		"-auth", "bearer", "-secrets-file", secrets, "-health-servers", strings.Join(health, ","),
		"-timeout", fmt.Sprint(o.timeout),
		"-rate", fmt.Sprint(fleetRateLimit.PerSecond), "-burst", fmt.Sprint(fleetRateLimit.Burst))
	if err != nil {
		return fail(err)
	}
	ps.list = append(ps.list, svc)
	base := "http://" + tcp.String()
	if err := waitHTTP(ctx, svc, base+"/healthz"); err != nil {
		return fail(err)
	}
	f.tokenURL = base + "/token"
	f.issued = func() (int, int, error) { return countIssued(svc.log) }
	tl.log("token service ready: POST %s (pid %d)", f.tokenURL, svc.cmd.Process.Pid)
	return ps, f, nil
}

// freePort finds a free loopback port by binding port 0 and letting go.
// Another process could take it before the child binds it; the child then
// fails to start and says so.
func freePort(network string) (netip.AddrPort, error) {
	var addr net.Addr
	switch network {
	case "udp":
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return netip.AddrPort{}, err
		}
		addr = c.LocalAddr()
		c.Close()
	default:
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return netip.AddrPort{}, err
		}
		addr = l.Addr()
		l.Close()
	}
	return netip.ParseAddrPort(addr.String())
}

// waitHTTP polls url until it answers 200, within 15 s.
func waitHTTP(ctx context.Context, p *proc, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s answered:\n%s", p.name, exitText(p.err), url, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("%s: %s did not answer 200 within 15 s:\n%s", p.name, url, p.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// countIssued reads the token service's log: one "connect token issued"
// record per token, one "request refused" per refusal.
func countIssued(path string) (issued, refused int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, `"msg":"connect token issued"`):
			issued++
		case strings.Contains(line, `"msg":"request refused"`):
			refused++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if issued == 0 && refused == 0 {
		return 0, 0, errors.New("the token service logged no requests")
	}
	return issued, refused, nil
}
