//go:build !linux

package engine

import "testing"

// e2eTransports are the networks the real-network tests run over: the
// veth testbed is Linux's.
func e2eTransports() []e2eTransport { return []e2eTransport{loopbackTransport} }

func xdpTransport(int) e2eTransport {
	return e2eTransport{"xdp", func(t *testing.T) e2eNet {
		t.Skip("the AF_XDP path is Linux's")
		return nil
	}}
}
