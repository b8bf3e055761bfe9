package codec

import (
	"encoding/binary"
	"net/netip"
)

// Address types on the wire.
const (
	AddressNone = 0
	AddressIPv4 = 1
	AddressIPv6 = 2
)

// AddressBytes returns how many bytes addr takes on the wire: 7 for IPv4,
// 19 for IPv6 (including IPv4-mapped IPv6, which stays IPv6).
func AddressBytes(addr netip.AddrPort) int {
	if addr.Addr().Is4() {
		return 1 + 4 + 2
	}
	return 1 + 16 + 2
}

// CheckAddress reports whether addr can be written on the wire.
func CheckAddress(addr netip.AddrPort) error {
	if !addr.IsValid() {
		return ErrAddressInvalid
	}
	if addr.Addr().Zone() != "" {
		return ErrAddressZone
	}
	return nil
}

// WriteAddress writes addr into buf in the token address format: a type
// byte, then four octets in dotted order (IPv4) or eight 16-bit groups each
// little-endian (IPv6), then the port little-endian. It returns the bytes
// written.
func WriteAddress(buf []byte, addr netip.AddrPort) (int, error) {
	if err := CheckAddress(addr); err != nil {
		return 0, err
	}
	w := writer{buf: buf}
	writeAddress(&w, addr)
	if w.overflow {
		return 0, ErrBufferTooSmall
	}
	return w.pos, nil
}

func writeAddress(w *writer, addr netip.AddrPort) {
	ip := addr.Addr()
	if ip.Is4() {
		a := ip.As4()
		w.u8(AddressIPv4)
		w.bytes(a[:])
	} else {
		a := ip.As16()
		w.u8(AddressIPv6)
		for i := 0; i < 16; i += 2 {
			// Groups are big-endian in a.As16 and little-endian on the wire.
			w.u16(binary.BigEndian.Uint16(a[i:]))
		}
	}
	w.u16(addr.Port())
}

// ReadAddress reads one address from the start of buf and returns it with
// the number of bytes consumed.
func ReadAddress(buf []byte) (netip.AddrPort, int, error) {
	r := reader{buf: buf}
	addr, err := readAddress(&r)
	if err != nil {
		return netip.AddrPort{}, 0, err
	}
	return addr, r.pos, nil
}

func readAddress(r *reader) (netip.AddrPort, error) {
	switch r.u8() {
	case AddressIPv4:
		var a [4]byte
		r.bytes(a[:])
		port := r.u16()
		if r.short {
			return netip.AddrPort{}, ReasonTokenUnreadable
		}
		return netip.AddrPortFrom(netip.AddrFrom4(a), port), nil
	case AddressIPv6:
		var a [16]byte
		for i := 0; i < 16; i += 2 {
			binary.BigEndian.PutUint16(a[i:], r.u16())
		}
		port := r.u16()
		if r.short {
			return netip.AddrPort{}, ReasonTokenUnreadable
		}
		return netip.AddrPortFrom(netip.AddrFrom16(a), port), nil
	default:
		if r.short {
			return netip.AddrPort{}, ReasonTokenUnreadable
		}
		return netip.AddrPort{}, ReasonAddressType
	}
}
