package webtransport

import (
	"net/netip"
	"testing"
	"time"
)

func TestAdmitterBuckets(t *testing.T) {
	cfg, err := Config{Addr: loopback, SessionsPerSecond: 1000, SessionBurst: 1000,
		SessionsPerSecondPerIP: 1, SessionBurstPerIP: 2, MaxTrackedIPs: 2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	a := newAdmitter(&cfg)
	now := time.Unix(100, 0)
	admit := func(ip string) refuseReason { return a.admit(netip.MustParseAddr(ip), now) }
	for i, tc := range []struct {
		ip   string
		want refuseReason
	}{
		{"192.0.2.1", refuseNone}, {"::ffff:192.0.2.1", refuseNone}, {"192.0.2.1", refuseRateIP}, // one IPv4 bucket
		{"2001:db8::1", refuseNone}, {"2001:db8::2", refuseNone}, {"2001:db8::ffff:3", refuseRateIP}, // one /64
		{"2001:db8:0:1::1", refuseIPTableFull}, // a third bucket: the table holds 2 limited ones
	} {
		if got := admit(tc.ip); got != tc.want {
			t.Fatalf("step %d, %s: reason %d; want %d", i, tc.ip, got, tc.want)
		}
	}
	// Once the buckets have refilled, their IPs are forgotten to make room.
	now = now.Add(3 * time.Second)
	if got := admit("2001:db8:0:1::1"); got != refuseNone {
		t.Fatalf("after refill: reason %d; want admitted", got)
	}
	if got := admit("192.0.2.1"); got != refuseNone {
		t.Fatalf("refilled IPv4 bucket: reason %d; want admitted", got)
	}
}

func TestAdmitterOverallRate(t *testing.T) {
	cfg, err := Config{Addr: loopback, SessionsPerSecond: 1, SessionBurst: 3,
		SessionsPerSecondPerIP: 100, SessionBurstPerIP: 100}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	a := newAdmitter(&cfg)
	now := time.Unix(100, 0)
	for i := range 3 {
		if r := a.admit(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), now); r != refuseNone {
			t.Fatalf("session %d refused (%d) within the overall burst", i, r)
		}
	}
	if r := a.admit(netip.MustParseAddr("198.51.100.1"), now); r != refuseRate {
		t.Fatalf("fourth session: reason %d; want the overall rate's refusal", r)
	}
}
