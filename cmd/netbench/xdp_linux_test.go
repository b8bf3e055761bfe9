//go:build linux

package main

import (
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/batchio"
)

func TestXDPFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-xdp", "fast"}, io.Discard); err == nil || !strings.Contains(err.Error(), "off, native, generic or try") {
		t.Errorf("-xdp fast: err = %v; want one naming the modes", err)
	}
	o, err := parseFlags([]string{"-xdp", "generic"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var sock batchio.Config
	if err := setXDP(&sock, o, netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if sock.XDP.Mode != batchio.XDPGeneric || sock.XDP.Interface != "lo" {
		t.Errorf("XDP = %+v; want generic on lo, the interface holding 127.0.0.1", sock.XDP)
	}
	// 198.18.0.0/15 is the benchmarking range: no interface outside a
	// testbed has it.
	if err := setXDP(&sock, o, netip.MustParseAddr("198.18.255.254")); err == nil || !strings.Contains(err.Error(), "-xdp-if") {
		t.Errorf("unheld address: err = %v; want one pointing at -xdp-if", err)
	}
	o.xdpIf = "eth9"
	if err := setXDP(&sock, o, netip.MustParseAddr("198.18.255.254")); err != nil || sock.XDP.Interface != "eth9" {
		t.Errorf("-xdp-if eth9: %v, %+v", err, sock.XDP)
	}
}

func TestLoadXDPFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-load-xdp", "fast"}, io.Discard); err == nil || !strings.Contains(err.Error(), "off, native, generic or try") {
		t.Errorf("-load-xdp fast: err = %v; want one naming the modes", err)
	}
	o, err := parseFlags([]string{"-load-xdp", "generic"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// 127.0.0.2 is not lo's address but is on its subnet, 127.0.0.0/8.
	x, err := loadXDP(o, netip.MustParseAddr("127.0.0.2"))
	if err != nil || x.Mode != batchio.XDPGeneric || x.Interface != "lo" || x.Frames != loadXDPFrames {
		t.Errorf("loadXDP toward 127.0.0.2 = %+v, %v; want generic on lo with %d frames", x, err, loadXDPFrames)
	}
	if _, err := loadXDP(o, netip.MustParseAddr("198.18.255.254")); err == nil || !strings.Contains(err.Error(), "-load-xdp-if") {
		t.Errorf("no interface on the subnet: err = %v; want one pointing at -load-xdp-if", err)
	}
	o.loadXDP = "off"
	if x, err := loadXDP(o, netip.MustParseAddr("127.0.0.2")); err != nil || x.Mode != batchio.XDPOff {
		t.Errorf("-load-xdp off: %+v, %v", x, err)
	}
}
