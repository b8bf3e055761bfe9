package aead_test

import "net/netip"

func mustAddr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
