package engine

import (
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type take struct {
		at   time.Duration // since t0
		n    int           // takes at that moment
		want int           // how many succeed
	}
	for _, c := range []struct {
		name  string
		rate  int
		takes []take
	}{
		{"unlimited", 0, []take{{0, 100000, 100000}}},
		{"burst is an eighth of a second", 800, []take{{0, 150, 100}, {0, 1, 0}}},
		{"refills at the rate", 800, []take{{0, 100, 100}, {10 * time.Millisecond, 10, 8}, {20 * time.Millisecond, 10, 8}}},
		{"refill stops at the burst", 800, []take{{0, 100, 100}, {time.Hour, 1000, 100}}},
		{"rate below 8 still allows one", 1, []take{{0, 2, 1}, {500 * time.Millisecond, 1, 0}, {time.Second, 1, 1}}},
		{"clock going back refills nothing", 80, []take{{time.Second, 10, 10}, {0, 10, 0}, {time.Second, 10, 0}, {time.Second + 100*time.Millisecond, 10, 8}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b tokenBucket
			b.init(c.rate, t0)
			for i, tk := range c.takes {
				got := 0
				for range tk.n {
					if b.take(t0.Add(tk.at)) {
						got++
					}
				}
				if got != tk.want {
					t.Fatalf("step %d at %v: %d of %d allowed, want %d", i, tk.at, got, tk.n, tk.want)
				}
			}
		})
	}
}

// TestTokenDecryptBudget: requests beyond TokenDecryptsPerSecond are dropped
// before their token is decrypted and counted; connected clients are not
// affected; once the flood stops a new client connects at once.
func TestTokenDecryptBudget(t *testing.T) {
	const rate = 1000
	h := newSrvHarness(t, ServerConfig{TokenDecryptsPerSecond: rate})
	p := h.peer("192.0.2.8:1000", 4, nil)
	i := p.connect()

	bad := h.peer("198.51.100.1:1", 5, nil).request()
	bad[len(bad)-1] ^= 1
	flood(h.conns[0], bad)
	for range 100 { // a second of flood
		h.step(10 * time.Millisecond)
		p.send(p.keepAlive())
	}
	h.conns[0].Generate = nil
	decrypted, rationed := h.codecDrops(codec.ReasonTokenDecrypt), h.drops(ServerDropRequestRate)
	if limit := uint64(rate + rate/8 + rate/100); decrypted > limit || decrypted < rate/2 {
		t.Fatalf("%d tokens decrypted in a flooded second; want about %d, at most %d", decrypted, rate, limit)
	}
	if rationed < 10*decrypted {
		t.Fatalf("only %d requests dropped by the budget against %d decrypted", rationed, decrypted)
	}
	if !h.s.slotConnected(i) {
		t.Fatal("the connected client lost its slot under the flood")
	}
	h.step(200 * time.Millisecond) // the budget refills its burst
	q := h.peer("192.0.2.9:1000", 6, nil)
	q.connect()
}
