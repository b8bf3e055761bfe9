package agones

import (
	"context"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, MaxAttempts: 3}
	for n, want := range []time.Duration{1: 10, 2: 20, 3: 40, 4: 80, 5: 100, 6: 100, 60: 100} {
		if want == 0 {
			continue
		}
		want *= time.Millisecond
		for range 50 {
			if d := b.delay(n); d < want/2 || d > want {
				t.Fatalf("delay(%d) = %v; want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
}

func TestSleep(t *testing.T) {
	if !sleep(context.Background(), time.Microsecond, nil) {
		t.Error("sleep with a live context reported it was cut short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if sleep(ctx, time.Hour, nil) {
		t.Error("sleep with a done context reported a full wait")
	}
	stop := make(chan struct{})
	close(stop)
	if sleep(context.Background(), time.Hour, stop) {
		t.Error("sleep with a closed stop reported a full wait")
	}
}
