//go:build !linux

package bench

import (
	"fmt"
	"net/netip"

	"github.com/netcode-go/netcode/batchio"
)

// ListenComparison opens a comparison-only socket ("xnet" or "single")
// for benchmarks; they are Linux system calls, so elsewhere it returns an
// error.
func ListenComparison(addr netip.AddrPort, mode string, cfg batchio.Config) (batchio.Conn, error) {
	return nil, fmt.Errorf("bench: the %q comparison conn needs Linux", mode)
}
