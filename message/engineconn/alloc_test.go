package engineconn

import (
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/message"
)

// TestAdapterAllocs: a tick of both adapters with messages both ways
// (Handle of payloads and acks, Update, Flush, Send, Receive) allocates
// nothing in the steady state.
func TestAdapterAllocs(t *testing.T) {
	w := newWorld(t, 2, batchiotest.SimConfig{Latency: 5 * time.Millisecond, Loss: 0.05}, message.DefaultConfig())
	w.connect(t)
	msg := make([]byte, 40)
	tick := func() {
		w.now = w.now.Add(5 * time.Millisecond)
		for k, c := range w.clients {
			c.Update(w.now)
			w.mcl[k].Update(w.now)
			conn := w.mcl[k].Conn()
			for _, ok := conn.Receive(0); ok; _, ok = conn.Receive(0) {
			}
			_ = conn.Send(0, msg)
			_ = conn.Send(2, msg)
			w.mcl[k].Flush(w.now)
		}
		if err := w.srv.Update(w.now); err != nil {
			t.Fatal(err)
		}
		w.srv.Poll(w.handle)
		for _, i := range w.slotOf {
			conn := w.msrv.Conn(i)
			for _, ok := conn.Receive(0); ok; _, ok = conn.Receive(0) {
			}
			for _, ok := conn.Receive(2); ok; _, ok = conn.Receive(2) {
			}
			_ = conn.Send(0, msg)
		}
		w.msrv.Flush(w.now)
	}
	for range 400 { // past the first RTT estimates and the queues' first laps
		tick()
	}
	if a := testing.AllocsPerRun(200, tick); a != 0 {
		t.Fatalf("%v allocations a tick; want 0", a)
	}
	if r, s := w.msrv.Errors(); r != 0 || s != 0 {
		t.Fatalf("server adapter: %d refused, %d failed sends", r, s)
	}
	if got := w.msrv.Conn(w.slotOf[0]).Stats().MessagesReceived; got < 500 {
		t.Fatalf("server received %d messages from client 0; want most of 1,200", got)
	}
}
