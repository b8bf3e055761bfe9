package message

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProtocolExample reads the example packet of PROTOCOL.md.
func TestProtocolExample(t *testing.T) {
	c := mustNew(t, DefaultConfig())
	pkt := unhex(t, "01 0303 0a28010173 0002 05026869 0402796f")
	if err := c.ReadPacket(0, pkt); err != nil {
		t.Fatal(err)
	}
	if m, ok := c.Receive(2); !ok || string(m) != "s" {
		t.Fatalf("unreliable: %q %v; want s", m, ok)
	}
	if m, ok := c.Receive(0); ok {
		t.Fatalf("ordered channel handed out %q with messages 0 to 4 missing", m)
	}
	rr := &c.chans[0].rr
	for _, id := range []uint16{5, 7} {
		if !rr.seen(id) {
			t.Errorf("message %d not held", id)
		}
	}
}

// TestWriteExact pins the bytes of a packet WritePacket writes.
func TestWriteExact(t *testing.T) {
	c := mustNew(t, DefaultConfig())
	_ = c.Send(0, []byte("hi"))
	_ = c.Send(2, []byte("s"))
	var buf [64]byte
	n := c.WritePacket(buf[:], 0, 0)
	// Unreliable first (priority 0): tag 0a, first 0, count 1, "s";
	// then ordered: tag 00, count 1, id 0, length 2, "hi".
	if want := unhex(t, "01 0a000101 73 0001 0002 6869"); !bytes.Equal(buf[:n], want) {
		t.Fatalf("got % x; want % x", buf[:n], want)
	}
}

func TestReadRefusesWhole(t *testing.T) {
	for _, tc := range []struct{ name, pkt, want string }{
		{"empty", "", "empty"},
		{"version", "02", "version 2; want 1"},
		{"channel", "01 0c", "section tag at byte 6 is 12; want 0 to 11"},
		{"type", "01 02 00", "section type 2 on channel 0"},
		{"blocks off", "01 05 00 01 01 00 00", "section type 1 on channel 1"},
		{"noncanonical", "01 8000", "not a canonical varint"},
		{"count 0", "01 00 00", "message count at byte 7 is 0; want 1 to 16383"},
		{"delta 0", "01 00 02 0000 0000", "message id delta at byte 10 is 0"},
		{"too long", "01 00 01 00 ff02", "message length at byte 9 is 383; want 0 to 256"},
		{"short", "01 00 01 00 05 6868", "message at byte 10: 5 bytes; 2 left"},
		{"fragment index", "01 01 00 0a 01 01", "fragment index at byte 10 is 1; want 0 to 0"},
		{"block size", "01 01 00 00", "block size at byte 8 is 0; want 1 to 262144"},
	} {
		c := mustNew(t, DefaultConfig())
		// After the version, a valid unreliable message (5 bytes) that
		// must not be applied.
		pkt := unhex(t, tc.pkt)
		if len(pkt) > 1 {
			pkt = append(unhex(t, "01 0a000101 73"), pkt[1:]...)
		}
		err := c.ReadPacket(1, pkt)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrMalformed naming %q", tc.name, err, tc.want)
		}
		if m, ok := c.Receive(2); ok {
			t.Errorf("%s: applied part of a refused packet: %q", tc.name, m)
		}
		if err := c.ReadPacket(1, unhex(t, "01")); err != nil {
			t.Errorf("%s: the refused sequence was marked read: %v", tc.name, err)
		}
	}
}

func TestVarint(t *testing.T) {
	var buf [maxVarintLen]byte
	for _, v := range []uint32{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<32 - 1} {
		n := putVarint(buf[:], v)
		if n != varintLen(v) {
			t.Fatalf("%d: wrote %d bytes; varintLen says %d", v, n, varintLen(v))
		}
		got, m := readVarint(buf[:n])
		if got != v || m != n {
			t.Fatalf("%d: read %d in %d bytes; want %d in %d", v, got, m, v, n)
		}
		if n > 1 {
			if _, m := readVarint(buf[:n-1]); m != 0 {
				t.Fatalf("%d: read from a truncated encoding", v)
			}
		}
	}
	for _, bad := range []string{"8000", "ff8000", "ffffffff10", "ffffffffff01"} {
		if _, m := readVarint(unhex(t, bad)); m != 0 {
			t.Errorf("%s: read; want refused", bad)
		}
	}
}
