//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// hungChildEnv makes the test binary run the command with a hung game.
const hungChildEnv = "NETCODE_SERVER_TEST_HUNG_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(hungChildEnv) == "1" {
		wrapGame = func(g dedicated.Game) dedicated.Game { return hungGame{g} }
		main() // the command, with its flags from os.Args
		return
	}
	os.Exit(m.Run())
}

// hungGame's first Tick never returns.
type hungGame struct{ dedicated.Game }

func (hungGame) Tick(*engine.Server, time.Time) { time.Sleep(time.Hour) }

// TestSIGTERMHungGame runs the command (the test binary in a child
// process, its game hung from the first tick): /healthz turns 503 within
// GameStall, and SIGTERM ends the process with a non-zero status within
// Run's documented bound (drain grace 2 s + GameStall + the HTTP close),
// not waiting for the game.
func TestSIGTERMHungGame(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the default GameStall; skipped with -short")
	}
	const grace = 2 * time.Second
	cmd := exec.Command(os.Args[0], "-protocol", "5eed", "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0",
		"-drain-grace", grace.String())
	cmd.Env = []string{hungChildEnv + "=1", keyEnv + "=" + newKeyHex(t), "NETCODE_LOG_FORMAT=json"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		exited <- <-exited
	})
	var logs syncBuf
	httpAddr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "netcode dedicated server serving" {
				if a, ok := m["http"].(string); ok {
					httpAddr <- a
				}
			}
		}
	}()
	var web string
	select {
	case a := <-httpAddr:
		web = "http://" + a
	case err := <-exited:
		exited <- err
		t.Fatalf("the command exited before serving: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the command did not serve within 30 s:\n%s", logs.String())
	}
	began := time.Now()
	for status(web+"/healthz") != 503 {
		if time.Since(began) > dedicated.DefaultGameStall+5*time.Second {
			t.Fatalf("/healthz not 503 %v after serving with the game hung:\n%s", time.Since(began), logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("/healthz 503 %v after serving", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	bound := grace + dedicated.DefaultGameStall + dedicated.HTTPShutdownTimeout
	select {
	case err := <-exited:
		exited <- err
		took := time.Since(began)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() <= 0 {
			t.Fatalf("exit after SIGTERM with the game hung: %v; want a non-zero status\n%s", err, logs.String())
		}
		if !strings.Contains(logs.String(), "the game is hung") {
			t.Errorf("no log line says the game is hung:\n%s", logs.String())
		}
		t.Logf("exited with status %d %v after SIGTERM (bound %v)", ee.ExitCode(), took.Round(time.Millisecond), bound)
	case <-time.After(bound + 2*time.Second):
		t.Fatalf("still running %v after SIGTERM; the bound is %v\n%s", time.Since(began), bound, logs.String())
	}
}
