//go:build unix

package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// TestSIGTERM runs the built command, connects two players over UDP, sends
// SIGTERM and checks the drain: /readyz 503, a new player refused, the
// connected players disconnected by the server at the end of the grace
// period, and exit status 0 within the bound.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	bin := filepath.Join(t.TempDir(), "netcode-server")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	keyHex := newKeyHex(t)
	key, _ := hex.DecodeString(keyHex)
	const grace = 1500 * time.Millisecond
	cmd := exec.Command(bin, "-protocol", "5eed", "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0",
		"-drain-grace", grace.String(), "-tick", "20")
	cmd.Env = []string{keyEnv + "=" + keyHex, "NETCODE_LOG_FORMAT=json"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan map[string]any, 64)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case lines <- m:
				default:
				}
			}
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	go func() { exited <- cmd.Wait() }()
	var serving map[string]any
	for serving == nil {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("the command exited before serving")
			}
			b, _ := json.Marshal(m)
			logs.Write(append(b, '\n'))
			if m["msg"] == "netcode dedicated server serving" {
				serving = m
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the command did not serve within 30 s:\n%s", logs.String())
		}
	}
	go func() { // keep draining the pipe so the command never blocks on it
		for range lines {
		}
	}()
	public, err := netip.ParseAddrPort(serving["public"].([]any)[0].(string))
	if err != nil {
		t.Fatal(err)
	}
	web := "http://" + serving["http"].(string)
	token := func(id uint64) []byte {
		tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: 0x5eed, PrivateKey: key, ClientID: id,
			PublicAddresses: []netip.AddrPort{public}, ExpireSeconds: 30, TimeoutSeconds: 10})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	p := newClients(t)
	p.dial(token(1))
	p.dial(token(2))
	p.until(10*time.Second, "two players connected", func() bool {
		return p.clients[0].State() == engine.Connected && p.clients[1].State() == engine.Connected
	})

	began := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.until(5*time.Second, "/readyz 503", func() bool { return status(web+"/readyz") == 503 })
	late := p.dial(token(3))
	p.until(5*time.Second, "the late player's answer", func() bool { return p.clients[late].State() != engine.SendingConnectionRequest })
	if s := p.clients[late].State(); s != engine.ConnectionDenied {
		t.Fatalf("a player connecting during the drain: %v; want denied", s)
	}
	p.until(grace+10*time.Second, "the disconnects", func() bool {
		return p.clients[0].State() == engine.Disconnected && p.clients[1].State() == engine.Disconnected
	})
	took := time.Since(began)
	if took < grace || took > grace+time.Second {
		t.Errorf("players disconnected %v after SIGTERM; want after the %v grace, within a second of it", took, grace)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("exit: %v (want status 0)", err)
		}
	case <-time.After(grace + 15*time.Second):
		t.Fatal("the command did not exit after the drain")
	}
	t.Logf("players disconnected %v and the command exited 0 %v after SIGTERM", took, time.Since(began))
}

// status GETs url and returns the status code (0 on failure).
func status(url string) int {
	resp, err := webClient.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
