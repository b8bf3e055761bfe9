package webtransport

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// memChildEnv makes the test binary a memory-measurement server (see
// BenchmarkSessionMemory).
const memChildEnv = "NETCODE_WT_MEM_CHILD"

// TestMain runs the measurement server when the benchmark starts the
// test binary as one; otherwise the tests.
func TestMain(m *testing.M) {
	if os.Getenv(memChildEnv) == "1" {
		os.Exit(memChild())
	}
	os.Exit(m.Run())
}

// memChild listens, answers every session's datagrams (so none is closed
// as unanswered) and, for each line on stdin, prints the heap and stacks
// in use after a GC, the open sessions and the goroutines.
func memChild() int {
	c, err := Listen(Config{Addr: netip.MustParseAddrPort("127.0.0.1:0"), MaxSessions: 1 << 14, MaxPendingSessions: 1 << 14,
		SessionsPerSecond: 1e6, SessionBurst: 1 << 14, SessionsPerSecondPerIP: 1e6, SessionBurstPerIP: 1 << 14,
		IdleTimeout: time.Hour, HandshakeTimeout: time.Hour})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer c.Close()
	h := c.CertificateHash()
	fmt.Println(c.LocalAddr(), hex.EncodeToString(h[:]))
	go func() {
		msgs := batchio.NewMessages(64, 1500)
		for {
			n, err := c.ReadBatch(msgs)
			if err != nil {
				return
			}
			if n > 0 {
				c.WriteBatch(msgs[:n])
				continue
			}
			if c.WaitRead(time.Time{}) != nil {
				return
			}
		}
	}()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Println(ms.HeapInuse+ms.StackInuse, c.TransportStats().Sessions, runtime.NumGoroutine())
	}
	return 0
}

// BenchmarkSessionMemory measures the server's memory per browser session:
// a server process (this binary) with b.N open, answered sessions, heap
// and goroutine stacks in use after a GC, less the same with none, over
// b.N. The clients are in this process, so they do not count.
//
//	go test -run XXX -bench SessionMemory -benchtime 500x ./batchio/webtransport
func BenchmarkSessionMemory(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memChildEnv+"=1")
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	out := bufio.NewScanner(outPipe)
	line := func() []string {
		if !out.Scan() {
			b.Fatalf("server child: %v", out.Err())
		}
		return strings.Fields(out.Text())
	}
	hello := line()
	if len(hello) != 2 {
		b.Fatalf("server child: %q", hello)
	}
	hb, _ := hex.DecodeString(hello[1])
	url := "https://" + hello[0] + DefaultPath
	measure := func() (mem uint64, sessions, goroutines int) {
		fmt.Fprintln(in, "m")
		if _, err := fmt.Sscan(strings.Join(line(), " "), &mem, &sessions, &goroutines); err != nil {
			b.Fatal(err)
		}
		return
	}
	mem0, _, g0 := measure()
	var clients []*ClientConn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Dial(ctx, url, [32]byte(hb))
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
		// One datagram each way: the session is answered, as a player's.
		write(b, c, c.server, []byte("hello"))
		if got := readN(b, c, 1); len(got) != 1 {
			b.Fatal("no echo")
		}
	}
	mem1, sessions, g1 := measure()
	if sessions != b.N {
		b.Fatalf("%d sessions open; want %d", sessions, b.N)
	}
	b.ReportMetric(float64(int64(mem1)-int64(mem0))/float64(b.N), "bytes/session")
	b.ReportMetric(float64(g1-g0)/float64(b.N), "goroutines/session")
	b.ReportMetric(0, "ns/op")
}
