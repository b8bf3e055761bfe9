package backend

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
	"github.com/netcode-go/netcode/engine/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// stuckCollector holds every scrape until release is closed.
type stuckCollector struct {
	desc    *prometheus.Desc
	release chan struct{}
}

func (c stuckCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c stuckCollector) Collect(ch chan<- prometheus.Metric) {
	<-c.release
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// TestHealthDirectoryScrapeFlood (issue 25 item 5): with every /metrics
// slot of a real dedicated server taken and a flood of scrapes answered
// 503, the token service still offers the server: all 16 token requests
// (each after a fresh probe) are issued with it. On the code before
// /readyz carried the load, 16 of 16 were refused no_servers.
func TestHealthDirectoryScrapeFlood(t *testing.T) {
	stuck := stuckCollector{prometheus.NewDesc("test_stuck", "A gauge whose scrape waits.", nil, nil), make(chan struct{})}
	reg := metrics.NewRegistry()
	reg.MustRegister(stuck)
	serving := make(chan string, 1)
	var public netip.AddrPort
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- dedicated.Run(ctx, dedicated.Config{
			Server: engine.ServerConfig{ProtocolID: testProtocol, PrivateKey: testKey, MaxClients: 16, Shards: 1},
			Bind:   []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, HTTPAddr: "127.0.0.1:0", Registry: reg,
			Serving: func(srv *engine.Server, a net.Addr) {
				public = srv.PublicAddresses()[0]
				serving <- "http://" + a.String()
			},
		}, dedicated.Echo())
	}()
	var url string
	select {
	case url = <-serving:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not serve within 10 s")
	}
	scraper := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	scrape := func() int {
		resp, err := scraper.Get(url + "/metrics")
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var refused atomic.Int64
	t.Cleanup(func() {
		close(stop)
		close(stuck.release)
		wg.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for range metrics.MaxScrapesInFlight {
		wg.Go(func() { scrape() })
	}
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if scrape() == http.StatusServiceUnavailable {
					refused.Add(1)
				}
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); refused.Load() < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d scrapes refused in 10 s; the flood is not taking the slots", refused.Load())
		}
	}

	clock := newFakeClock()
	// A generous probe timeout: the flood loads the machine, and the point
	// is the scrape slots, not the probe's speed.
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{{URL: url, Server: Server{Public: public}}},
		Timeout: 5 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := testConfig(t)
	cfg.Directory = d
	h := mustHandler(t, cfg)
	issued := 0
	for i := range 16 {
		clock.Advance(DefaultHealthCacheFor) // every request probes afresh
		w := post(h, strconv.Itoa(i+1), "")
		if w.Code == http.StatusOK {
			if resp := decodeTokenResponse(t, w); len(resp.Servers) == 1 && resp.Servers[0] == public.String() {
				issued++
			}
		}
	}
	if issued != 16 {
		t.Errorf("%d of 16 token requests issued with the server during the scrape flood; want 16", issued)
	}
	t.Logf("%d of 16 issued while %d scrapes were refused 503", issued, refused.Load())
}
