package dedicated_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// BenchmarkEcho measures the dedicated server's echo game (one shard)
// under a closed-loop load, one client keeping 64 payloads in flight,
// without a scraper and with one that GETs /metrics, /healthz and /readyz
// every 100 ms as Prometheus and an orchestrator would. On a noisy machine
// compare rounds that alternate the two, each a run of its own:
//
//	go test -c -o echo.test ./engine/dedicated
//	for i in 1 2 3 4 5 6 7 8; do
//	  ./echo.test -test.run '^$' -test.bench 'Echo/scraper=off/' -test.benchtime 300000x
//	  ./echo.test -test.run '^$' -test.bench 'Echo/scraper=100ms/' -test.benchtime 300000x
//	done
func BenchmarkEcho(b *testing.B) {
	for _, size := range []int{64, 1200} {
		for _, scrape := range []time.Duration{0, 100 * time.Millisecond} {
			name := "scraper=off"
			if scrape > 0 {
				name = "scraper=" + scrape.String()
			}
			b.Run(fmt.Sprintf("%s/%d", name, size), func(b *testing.B) { benchEcho(b, size, scrape) })
		}
	}
}

func benchEcho(b *testing.B, size int, scrape time.Duration) {
	r := start(b, dedicated.Config{Server: engine.ServerConfig{Shards: 1, MaxClients: 4}}, dedicated.Echo())
	p := newPlayers(b)
	p.dial(r.token(1))
	p.until(5*time.Second, "the load client connected", func() bool { return p.state(0) == engine.Connected })
	c := p.clients[0]

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var scrapes, failed int
	if scrape > 0 {
		web := &http.Client{Timeout: 5 * time.Second} // keep-alive, as Prometheus
		wg.Go(func() {
			tick := time.NewTicker(scrape)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
					resp, err := web.Get(r.url + path)
					if err != nil {
						failed++
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failed++
					}
				}
				scrapes++
			}
		})
	}

	payload := make([]byte, size)
	buf := make([]byte, 1200)
	const window = 64
	inFlight, received := 0, 0
	lastProgress := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for received < b.N {
		for inFlight < window {
			if err := c.SendPacket(payload); err != nil {
				b.Fatal(err)
			}
			inFlight++
		}
		c.Flush()
		now := time.Now()
		c.Update(now)
		got := 0
		for {
			if _, _, ok := c.ReceivePacket(buf); !ok {
				break
			}
			got++
		}
		if got > 0 {
			received += got
			inFlight -= got
			lastProgress = now
			continue
		}
		if now.Sub(lastProgress) > 50*time.Millisecond {
			inFlight = 0 // lost to a full socket buffer: refill the window
			lastProgress = now
		}
		c.Wait(now.Add(5 * time.Millisecond))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(received)/elapsed.Seconds(), "echoes/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(received), "ns/echo")
	if scrape > 0 {
		b.ReportMetric(float64(scrapes)/elapsed.Seconds(), "scrapes/s")
		if failed > 0 {
			b.Fatalf("%d scrape requests failed", failed)
		}
	}
	if c.State() != engine.Connected {
		b.Fatalf("load client %v", c.State())
	}
}
