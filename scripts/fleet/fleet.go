package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// protocolID is the fleet's protocol id (hex), any value both sides agree on.
const protocolID = "f1ee7"

// stopWait is how long a process has to exit after SIGTERM at the end of
// a run before it is killed: a drain with no clients left is immediate.
const stopWait = 15 * time.Second

// Config is one fleet run.
type Config struct {
	ServerBin, TokenBin string
	Servers             int
	Clients             int
	MaxClients          int // per server; 0: every client fits on two servers
	RateHz              float64
	KillAt, DrainAt     time.Duration // after every client connected
	DrainGrace          time.Duration
	TimeoutSeconds      int
	Settle              time.Duration
	LogDir              string
}

func (c *Config) validate() error {
	switch {
	case c.ServerBin == "" || c.TokenBin == "":
		return errors.New("-server-bin and -token-bin are required (scripts/fleet.sh builds them)")
	case c.Servers < 3 || c.Servers > 32:
		return fmt.Errorf("-servers %d: want 3 to 32 (one is killed, one drained, the token lists up to 32)", c.Servers)
	case c.Clients < 1 || c.Clients > 4096:
		return fmt.Errorf("-clients %d: want 1 to 4096", c.Clients)
	case c.MaxClients < 0:
		return fmt.Errorf("-max-clients %d: want 0 (enough) or more", c.MaxClients)
	case !(c.RateHz > 0 && c.RateHz <= 1000):
		return fmt.Errorf("-rate %g: want more than 0 and at most 1000 Hz", c.RateHz)
	case c.KillAt <= 0 || c.DrainAt <= c.KillAt:
		return fmt.Errorf("-kill-at %v, -drain-at %v: want 0 < kill-at < drain-at", c.KillAt, c.DrainAt)
	case c.DrainGrace < time.Second:
		return fmt.Errorf("-drain-grace %v: want at least 1s (the server's minimum)", c.DrainGrace)
	case c.TimeoutSeconds < 1 || c.TimeoutSeconds > 60:
		return fmt.Errorf("-timeout %d: want 1 to 60 seconds", c.TimeoutSeconds)
	case c.Settle <= 0:
		return fmt.Errorf("-settle %v: want more than 0", c.Settle)
	}
	if c.MaxClients == 0 {
		c.MaxClients = c.Clients
	}
	return nil
}

// proc is one child process and its addresses.
type proc struct {
	name   string
	cmd    *exec.Cmd
	udp    netip.AddrPort // a server's game address
	http   string         // host:port of its HTTP endpoints
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

func (p *proc) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// stop ends the process, with SIGTERM then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.exited
	}
}

// start runs bin with args, its output in dir/name.log.
func start(dir, name, bin string, args ...string) (*proc, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// freeUDP and freeTCP return a loopback port nothing listens on now.
func freeUDP() (netip.AddrPort, error) {
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		return netip.AddrPort{}, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort(), nil
}

func freeTCP() (string, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitHTTP polls url until it answers 200, the process exits or the
// deadline passes.
func waitHTTP(ctx context.Context, p *proc, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before %s answered 200: %v (see its log)", p.name, url, p.err)
		case <-ctx.Done():
			return fmt.Errorf("%s: %s did not answer 200 within %v", p.name, url, within)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fleet is the running processes.
type fleet struct {
	dir     string
	servers []*proc
	tokens  *proc
	url     string // the token service's POST URL
}

// startFleet starts the servers and the token service and waits until all
// are ready.
func startFleet(ctx context.Context, cfg Config, dir string) (*fleet, error) {
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	f := &fleet{dir: dir}
	var health []string
	for i := range cfg.Servers {
		udp, err := freeUDP()
		if err != nil {
			f.close()
			return nil, err
		}
		hp, err := freeTCP()
		if err != nil {
			f.close()
			return nil, err
		}
		p, err := start(dir, fmt.Sprintf("server-%d", i+1), cfg.ServerBin,
			"-protocol", protocolID, "-key-file", keyFile, "-bind", udp.String(), "-http", hp,
			"-max-clients", strconv.Itoa(cfg.MaxClients), "-shards", "1",
			"-drain-grace", cfg.DrainGrace.String(), "-game", "echo")
		if err != nil {
			f.close()
			return nil, err
		}
		p.udp, p.http = udp, hp
		f.servers = append(f.servers, p)
		health = append(health, "http://"+hp+"="+udp.String())
	}
	tp, err := freeTCP()
	if err != nil {
		f.close()
		return nil, err
	}
	f.tokens, err = start(dir, "token-service", cfg.TokenBin, "serve",
		"-protocol", protocolID, "-key-file", keyFile, "-listen", tp, "-auth", "dev",
		"-health-servers", strings.Join(health, ","), "-timeout", strconv.Itoa(cfg.TimeoutSeconds))
	if err != nil {
		f.close()
		return nil, err
	}
	f.url = "http://" + tp + "/token"
	for _, p := range f.servers {
		if err := waitHTTP(ctx, p, "http://"+p.http+"/readyz", 20*time.Second); err != nil {
			f.close()
			return nil, err
		}
	}
	if err := waitHTTP(ctx, f.tokens, "http://"+tp+"/healthz", 20*time.Second); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// close stops every process still running.
func (f *fleet) close() {
	var wg sync.WaitGroup
	for _, p := range append(f.servers, f.tokens) {
		if p != nil {
			wg.Go(func() { p.stop(stopWait) })
		}
	}
	wg.Wait()
}
