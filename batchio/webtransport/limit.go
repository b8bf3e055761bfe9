package webtransport

import (
	"net/netip"
	"time"
)

const sweepInterval = 100 * time.Millisecond

// bucket is a token bucket: burst tokens refilled at rate per second.
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) take(now time.Time, rate float64, burst int) bool {
	b.refill(now, rate, burst)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *bucket) refill(now time.Time, rate float64, burst int) {
	if b.last.IsZero() {
		b.tokens, b.last = float64(burst), now
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(burst), b.tokens+d.Seconds()*rate)
		b.last = now
	}
}

// admitter rations new connections and sessions: one bucket overall and a
// bounded table of buckets per remote IP. The caller holds the conn's lock.
type admitter struct {
	rate, rateIP   float64
	burst, burstIP int
	maxIPs         int
	all            bucket
	ips            map[netip.Addr]*bucket
	lastSweep      time.Time
}

func newAdmitter(cfg *Config) admitter {
	return admitter{rate: cfg.SessionsPerSecond, burst: cfg.SessionBurst,
		rateIP: cfg.SessionsPerSecondPerIP, burstIP: cfg.SessionBurstPerIP,
		maxIPs: cfg.MaxTrackedIPs, ips: make(map[netip.Addr]*bucket)}
}

// admit takes a token from ip's bucket and the overall one, and returns
// the reason it cannot (0: admitted).
func (a *admitter) admit(ip netip.Addr, now time.Time) refuseReason {
	ip = ip.Unmap().WithZone("")
	b := a.ips[ip]
	if b == nil {
		if len(a.ips) >= a.maxIPs {
			a.sweep(now)
			if len(a.ips) >= a.maxIPs {
				return refuseIPTableFull
			}
		}
		b = &bucket{}
		b.refill(now, a.rateIP, a.burstIP)
		a.ips[ip] = b
	}
	b.refill(now, a.rateIP, a.burstIP)
	if b.tokens < 1 {
		return refuseRateIP
	}
	if !a.all.take(now, a.rate, a.burst) {
		return refuseRate
	}
	b.tokens--
	return 0
}

// sweep forgets the IPs whose buckets are full again: a new bucket would
// be the same.
// It runs at most every sweepInterval, so a stream of new IPs finding the
// table full costs a map walk a few times a second, not one each.
func (a *admitter) sweep(now time.Time) {
	if d := now.Sub(a.lastSweep); d >= 0 && d < sweepInterval {
		return
	}
	a.lastSweep = now
	for ip, b := range a.ips {
		b.refill(now, a.rateIP, a.burstIP)
		if b.tokens >= float64(a.burstIP) {
			delete(a.ips, ip)
		}
	}
}
