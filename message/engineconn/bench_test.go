package engineconn

import (
	"fmt"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/message"
)

// BenchmarkEngineMessages: reliable-ordered messages from a server to one
// client through everything (message packets, reliable endpoints,
// netcode's encryption, the in-memory network and its simulator with 1 ms
// each way), both ends on this goroutine, a packet each way every 1 ms of
// fake time. One op is one message delivered: msgs/s is per core for
// both ends together.
func BenchmarkEngineMessages(b *testing.B) {
	for _, size := range []int{16, 200} {
		for _, loss := range []float64{0, 0.05} {
			b.Run(fmt.Sprintf("%dB/loss%.0f%%", size, loss*100), func(b *testing.B) {
				mcfg := message.DefaultConfig()
				mcfg.Channels[0].SendQueueSize, mcfg.Channels[0].ReceiveQueueSize = 1024, 1024
				mcfg.InitialRTT = 5 * time.Millisecond
				w := newWorld(b, 1, batchiotest.SimConfig{Latency: time.Millisecond, Loss: loss}, mcfg)
				w.connect(b)
				msg := make([]byte, size)
				got := 0
				b.ReportAllocs()
				b.ResetTimer()
				for got < b.N {
					w.now = w.now.Add(time.Millisecond)
					c := w.clients[0]
					c.Update(w.now)
					w.mcl[0].Update(w.now)
					for _, ok := w.mcl[0].Conn().Receive(0); ok; _, ok = w.mcl[0].Conn().Receive(0) {
						got++
					}
					w.mcl[0].Flush(w.now)
					if err := w.srv.Update(w.now); err != nil {
						b.Fatal(err)
					}
					w.srv.Poll(w.handle)
					sc := w.msrv.Conn(w.slotOf[0])
					for sc.Send(0, msg) == nil {
					}
					w.msrv.Flush(w.now)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}
