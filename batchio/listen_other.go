//go:build !linux

package batchio

import (
	"errors"
	"net/netip"
)

// Listen opens the fastest socket this system has: outside Linux the
// portable UDPConn, one system call per datagram.
func Listen(addr netip.AddrPort, cfg MmsgConfig) (Conn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.PacketInfo {
		return nil, errors.New("batchio: PacketInfo needs Linux")
	}
	return ListenUDP(addr, UDPConfig{RecvBuffer: cfg.RecvBuffer, SendBuffer: cfg.SendBuffer})
}
