package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a started netcode-server and its log lines.
type proc struct {
	cmd    *exec.Cmd
	lines  chan map[string]any
	logs   *syncBuf
	exited chan error
}

func startProc(t *testing.T, bin, keyHex string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), lines: make(chan map[string]any, 64), logs: new(syncBuf), exited: make(chan error, 1)}
	p.cmd.Env = []string{keyEnv + "=" + keyHex, "NETCODE_LOG_FORMAT=json", "NETCODE_HTTP=off", "NETCODE_PROTOCOL=5eed"}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.Write([]byte(sc.Text() + "\n"))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				select {
				case p.lines <- m:
				default:
				}
			}
		}
		close(p.lines)
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		for range p.lines {
		}
	})
	return p
}

// serving waits for the serving line and returns its UDP address, or ""
// if the process ended first.
func (p *proc) serving(t *testing.T) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				return ""
			}
			if m["msg"] == "netcode dedicated server serving" {
				return m["udp"].([]any)[0].(string)
			}
		case <-timeout:
			t.Fatalf("no serving line within 20 s:\n%s", p.logs)
		}
	}
}

// exitCode waits for the process and returns its status.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	for range p.lines {
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		t.Fatal("the process did not exit within 20 s")
		return -1
	}
}

// TestSecondServerRefused runs the built command: a second two-shard
// server on a first one's address exits 1 naming the address; after the
// first is killed (SIGKILL, as a crash), a server on the address serves.
func TestSecondServerRefused(t *testing.T) {
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
	key := newKeyHex(t)
	first := startProc(t, bin, key, "-bind", "127.0.0.1:0", "-shards", "2")
	addr := first.serving(t)
	if addr == "" {
		t.Fatalf("the first server did not serve:\n%s", first.logs)
	}
	second := startProc(t, bin, key, "-bind", addr, "-shards", "2")
	if got := second.serving(t); got != "" {
		t.Fatalf("a second server serves on %s", got)
	}
	if code, logs := second.exitCode(t), second.logs.String(); code != 1 || !strings.Contains(logs, addr) || !strings.Contains(logs, "address already served by another socket") {
		t.Errorf("second server: exit %d; want 1 and an error naming %s:\n%s", code, addr, logs)
	}
	first.cmd.Process.Kill()
	first.exitCode(t)
	restarted := startProc(t, bin, key, "-bind", addr, "-shards", "2")
	if got := restarted.serving(t); got != addr {
		t.Fatalf("after the crash, a server on %s serves on %q:\n%s", addr, got, restarted.logs)
	}
	restarted.cmd.Process.Signal(syscall.SIGTERM)
	if code := restarted.exitCode(t); code != 0 {
		t.Errorf("the restarted server exited %d after SIGTERM", code)
	}
}
