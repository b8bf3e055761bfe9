package reliable_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

func TestHeaderEncoding(t *testing.T) {
	tests := []struct {
		h    reliable.Header
		want string
	}{
		// A fresh endpoint: ack 65535 (difference 1), nothing received.
		{reliable.Header{Sequence: 0, Ack: 65535, AckBits: 0}, "3e00000100000000"},
		// Healthy link: every ack_bits byte 0xFF is elided.
		{reliable.Header{Sequence: 10, Ack: 9, AckBits: 0xFFFFFFFF}, "200a0001"},
		// Difference 256: a two-byte ack.
		{reliable.Header{Sequence: 256, Ack: 0, AckBits: 0xFFFFFFFF}, "0000010000"},
		// Worst case, 9 bytes.
		{reliable.Header{Sequence: 0x1234, Ack: 0x0034, AckBits: 0x01020304}, "1e3412340004030201"},
		// Only byte 2 present.
		{reliable.Header{Sequence: 5, Ack: 5, AckBits: 0xFF00FFFF}, "28050000" + "00"},
	}
	for _, tt := range tests {
		var b [reliable.MaxHeaderBytes]byte
		n := reliable.WriteHeader(b[:], tt.h)
		if got := hex.EncodeToString(b[:n]); got != tt.want || n != reliable.HeaderLen(tt.h) {
			t.Errorf("WriteHeader(%+v) = %s, want %s", tt.h, got, tt.want)
		}
		if n > 0 && reliable.WriteHeader(b[:n-1], tt.h) != 0 {
			t.Errorf("WriteHeader(%+v) wrote into a short buffer", tt.h)
		}
		got, m, r := reliable.ReadHeader(b[:n])
		if got != tt.h || m != n || r != reliable.DropNone {
			t.Errorf("ReadHeader(%s) = %+v, %d, %v", tt.want, got, m, r)
		}
	}
}

func TestReadHeaderAcceptsNonCanonical(t *testing.T) {
	tests := []struct {
		in   string
		want reliable.Header
	}{
		{"220a0001ff", reliable.Header{Sequence: 10, Ack: 9, AckBits: 0xFFFFFFFF}},      // explicit 0xFF byte
		{"000a000900", reliable.Header{Sequence: 10, Ack: 9, AckBits: 0xFFFFFFFF}},      // 16-bit ack, difference 1
		{"e00a0001", reliable.Header{Sequence: 10, Ack: 9, AckBits: 0xFFFFFFFF}},        // prefix bits 6 and 7
		{"200a000199", reliable.Header{Sequence: 10, Ack: 9, AckBits: 0xFFFFFFFF}},      // trailing payload
		{"20ffff05", reliable.Header{Sequence: 65535, Ack: 65530, AckBits: 0xFFFFFFFF}}, // ack below the wrap
	}
	for _, tt := range tests {
		in, _ := hex.DecodeString(tt.in)
		got, n, r := reliable.ReadHeader(in)
		if got != tt.want || r != reliable.DropNone {
			t.Errorf("ReadHeader(%s) = %+v, %v; want %+v", tt.in, got, r, tt.want)
		}
		if tt.in == "200a000199" && n != 4 {
			t.Errorf("header length %d, want 4", n)
		}
	}
	var b [reliable.MaxHeaderBytes]byte
	in, _ := hex.DecodeString("000a000900")
	h, _, _ := reliable.ReadHeader(in)
	if n := reliable.WriteHeader(b[:], h); bytes.Equal(b[:n], in) {
		t.Error("a non-canonical header re-encoded to itself")
	}
}
