package bench

import (
	"math"
	"testing"
)

func TestStampRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ns   int64
		seq  uint64
		size int
	}{
		{"zero", 0, 0, StampBytes},
		{"typical", 1_234_567_890, 42, 100},
		{"extremes", math.MaxInt64, math.MaxUint64, 1200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]byte, tt.size)
			for i := range p {
				p[i] = 0xee
			}
			PutStamp(p, tt.ns, tt.seq)
			ns, seq, ok := ReadStamp(p)
			if !ok || ns != tt.ns || seq != tt.seq {
				t.Fatalf("ReadStamp = %d, %d, %v; want %d, %d, true", ns, seq, ok, tt.ns, tt.seq)
			}
			for i := StampBytes; i < len(p); i++ {
				if p[i] != 0xee {
					t.Fatalf("PutStamp wrote byte %d beyond the stamp", i)
				}
			}
		})
	}
}

func TestStampLayout(t *testing.T) {
	p := make([]byte, StampBytes)
	PutStamp(p, 0x0102030405060708, 0x1112131415161718)
	want := []byte{8, 7, 6, 5, 4, 3, 2, 1, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11}
	if string(p) != string(want) {
		t.Fatalf("stamp bytes % x; want little-endian time then sequence % x", p, want)
	}
}

func TestReadStampShort(t *testing.T) {
	for n := range StampBytes {
		if _, _, ok := ReadStamp(make([]byte, n)); ok {
			t.Fatalf("ReadStamp accepted %d bytes", n)
		}
	}
}
