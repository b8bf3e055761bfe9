package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
)

var webClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// clients are test players, driven by the test goroutine.
type clients struct {
	t       *testing.T
	clients []*engine.Client
	buf     []byte
}

func newClients(t *testing.T) *clients { return &clients{t: t, buf: make([]byte, 1200)} }

func (p *clients) dial(tok []byte) int {
	p.t.Helper()
	c, err := engine.DialClient(engine.ClientConfig{})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { c.Close() })
	if err := c.Connect(tok, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	p.clients = append(p.clients, c)
	return len(p.clients) - 1
}

// until updates the clients until cond holds, failing after d.
func (p *clients) until(d time.Duration, what string, cond func() bool) {
	p.t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		now := time.Now()
		for _, c := range p.clients {
			c.Update(now)
			for {
				if _, _, ok := c.ReceivePacket(p.buf); !ok {
					break
				}
			}
		}
	}
}
