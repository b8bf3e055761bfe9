//go:build linux

package batchio

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkWriteBurst compares the two ways WriteBatch can send a burst
// of 64 equal datagrams to one address: a sendmmsg header per datagram,
// or GSO runs (one header for 64-byte datagrams, two for 1200-byte ones,
// since 64 of those exceed a GSO send's 65,000 bytes). It reports
// datagrams sent per second and, to show none went missing, received
// per second by a goroutine that drains the receiver. On loopback the
// sender also pays for delivery, where the kernel splits GSO runs again,
// so a real NIC gains more.
//
//	go test -run '^$' -bench WriteBurst -benchtime 5000x ./batchio
func BenchmarkWriteBurst(b *testing.B) {
	for _, size := range []int{64, 1200} {
		for _, gso := range []bool{false, true} {
			name := "sendmmsg"
			if gso {
				name = "gso"
			}
			b.Run(fmt.Sprintf("%dB/%s", size, name), func(b *testing.B) {
				benchWriteBurst(b, size, gso)
			})
		}
	}
}

func benchWriteBurst(b *testing.B, size int, gso bool) {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	cli, err := listenMmsg(loopback, Config{DisableGSO: !gso})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	if gso && !cli.gso.Load() {
		b.Skip("kernel without UDP GSO")
	}
	srv, err := listenMmsg(loopback, Config{DisableGSO: true})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var received atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		in := makeMsgs(srv.batch, size)
		for {
			n, err := srv.ReadBatch(in)
			if err != nil {
				return
			}
			received.Add(int64(n))
			if n == 0 && srv.WaitRead(time.Now().Add(10*time.Millisecond)) != nil {
				return
			}
		}
	}()
	defer func() {
		srv.Close()
		wg.Wait()
	}()

	out := makeMsgs(64, size)
	for i := range out {
		out[i].N, out[i].Addr = size, srv.LocalAddr()
	}
	sent := 0
	b.ReportAllocs()
	for b.Loop() {
		n, err := cli.WriteBatch(out)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(received.Load())/b.Elapsed().Seconds(), "received/s")
	b.ReportMetric(float64(cli.Stats().SendCalls)/float64(b.N), "calls/op")
}
