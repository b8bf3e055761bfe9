//go:build unix

package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/netip"
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
// process, its game hung from the first tick) with a player connected:
// /healthz turns 503 within GameStall, and SIGTERM ends the process with
// a non-zero status within Run's documented bound (drain grace 2 s +
// GameStall + the HTTP close), not waiting for the game. The player
// plays on for the grace, as in any drain.
func TestSIGTERMHungGame(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the default GameStall; skipped with -short")
	}
	const grace = 2 * time.Second
	cmd := exec.Command(os.Args[0], "-protocol", "5eed", "-bind", "127.0.0.1:0", "-http", "127.0.0.1:0",
		"-drain-grace", grace.String())
	keyHex := newKeyHex(t)
	key, _ := hex.DecodeString(keyHex)
	cmd.Env = []string{hungChildEnv + "=1", keyEnv + "=" + keyHex, "NETCODE_LOG_FORMAT=json"}
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
	serving := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "netcode dedicated server serving" {
				serving <- m
			}
		}
	}()
	var web string
	var public netip.AddrPort
	select {
	case m := <-serving:
		web = "http://" + m["http"].(string)
		if public, err = netip.ParseAddrPort(m["public"].([]any)[0].(string)); err != nil {
			t.Fatal(err)
		}
	case err := <-exited:
		exited <- err
		t.Fatalf("the command exited before serving: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the command did not serve within 30 s:\n%s", logs.String())
	}
	tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: 0x5eed, PrivateKey: key, ClientID: 1,
		PublicAddresses: []netip.AddrPort{public}, ExpireSeconds: 30, TimeoutSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	p := newClients(t)
	p.dial(tok)
	p.until(10*time.Second, "the player connected", func() bool { return p.clients[0].State() == engine.Connected })

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
	var exitErr error
	// The player plays on (its client updated) until the process ends.
	p.until(bound+2*time.Second, "the exit after SIGTERM", func() bool {
		select {
		case exitErr = <-exited:
			exited <- exitErr
			return true
		default:
			return false
		}
	})
	took := time.Since(began)
	var ee *exec.ExitError
	if !errors.As(exitErr, &ee) || ee.ExitCode() <= 0 {
		t.Fatalf("exit after SIGTERM with the game hung: %v; want a non-zero status\n%s", exitErr, logs.String())
	}
	if took < grace {
		t.Errorf("exited %v after SIGTERM; the connected player had a %v grace", took, grace)
	}
	if !strings.Contains(logs.String(), "the game is hung") {
		t.Errorf("no log line says the game is hung:\n%s", logs.String())
	}
	t.Logf("exited with status %d %v after SIGTERM (grace %v, bound %v)", ee.ExitCode(), took.Round(time.Millisecond), grace, bound)
}
