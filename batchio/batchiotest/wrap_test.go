package batchiotest

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// plainConn is a conn with nothing beyond batchio.Conn: no Wake.
type plainConn struct{ batchio.Conn }

// TestWrappersUnwrapAndWake: batchio.As finds the conn under a SimConn and
// a FaultConn (in either order), and Wake on a wrapper ends a WaitRead
// parked in the conn underneath.
func TestWrappersUnwrapAndWake(t *testing.T) {
	a, _ := memPair(t)
	sim, err := NewSimConn(a, SimConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFaultConn(sim, FaultConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Unwrap() != sim || sim.Unwrap() != a {
		t.Fatal("Unwrap does not return the wrapped conn")
	}
	if got, ok := batchio.As[*MemConn](f); !ok || got != a {
		t.Fatalf("As[*MemConn] through two wrappers = %v, %v", got, ok)
	}
	if got, ok := batchio.As[*SimConn](f); !ok || got != sim {
		t.Fatalf("As[*SimConn] = %v, %v", got, ok)
	}
	if _, ok := batchio.As[batchio.Shedder](f); ok {
		t.Fatal("As found a Shedder where there is none")
	}
	for _, w := range []batchio.Waker{a, sim, f} {
		done := waitErr(f, time.Now().Add(10*time.Second))
		select {
		case err := <-done:
			t.Fatalf("WaitRead returned %v before Wake", err)
		case <-time.After(10 * time.Millisecond):
		}
		w.Wake()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%T.Wake: WaitRead = %v", w, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%T.Wake did not end the WaitRead", w)
		}
	}
	// A Wake before the wait makes it return at once.
	f.Wake()
	start := time.Now()
	if err := f.WaitRead(start.Add(10 * time.Second)); err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("WaitRead after Wake = %v after %v", err, time.Since(start))
	}
	// A wrapper of a conn that cannot be woken does nothing on Wake.
	plain, err := NewFaultConn(plainConn{NewConn(netip.MustParseAddrPort("10.0.0.9:9"))}, FaultConfig{})
	if err != nil {
		t.Fatal(err)
	}
	plain.Wake()
}
