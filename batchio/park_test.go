package batchio

import (
	"errors"
	"testing"
	"time"
)

// TestParker: a wait ends on Notify, on Wake (also one made before it),
// on its deadline, on end and on Close, after which every wait returns
// ErrClosed; a stale notification does not end the next wait early; a
// steady-state wait allocates nothing.
func TestParker(t *testing.T) {
	none := func() bool { return false }
	p := NewParker()
	soon := func() time.Time { return time.Now().Add(20 * time.Millisecond) }

	p.Notify() // stale: read before the wait begins
	start := time.Now()
	if blocked, err := p.Wait(soon(), none, nil); err != nil || !blocked || time.Since(start) < 15*time.Millisecond {
		t.Fatalf("a stale notification ended the wait: blocked %v, err %v after %v", blocked, err, time.Since(start))
	}
	p.Wake()
	if blocked, err := p.Wait(time.Time{}, none, nil); err != nil || blocked {
		t.Fatalf("a pending Wake: blocked %v, err %v", blocked, err)
	}
	if blocked, err := p.Wait(time.Time{}, func() bool { return true }, nil); err != nil || blocked {
		t.Fatalf("datagrams pending: blocked %v, err %v", blocked, err)
	}
	for name, end := range map[string]func(chan struct{}){
		"notify": func(chan struct{}) { p.Notify() },
		"wake":   func(chan struct{}) { p.Wake() },
		"end":    func(e chan struct{}) { close(e) },
	} {
		e := make(chan struct{})
		go func() { time.Sleep(5 * time.Millisecond); end(e) }()
		if blocked, err := p.Wait(time.Now().Add(10*time.Second), none, e); err != nil || !blocked {
			t.Fatalf("%s: blocked %v, err %v", name, blocked, err)
		}
	}
	if allocs := testing.AllocsPerRun(50, func() { p.Wait(time.Now().Add(time.Microsecond), none, nil) }); allocs != 0 {
		t.Errorf("a wait with a deadline allocates %.1f times", allocs)
	}
	go func() { time.Sleep(5 * time.Millisecond); p.Close() }()
	if _, err := p.Wait(time.Time{}, none, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close during a wait: %v", err)
	}
	p.Close() // twice is fine
	if _, err := p.Wait(time.Time{}, func() bool { return true }, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("a wait after Close: %v", err)
	}
}
