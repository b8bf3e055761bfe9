package reliable_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

// FuzzReadHeader: no input panics; a read header re-encodes to a header
// that reads back the same; canonical input re-encodes to itself.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{"", "\x20", "\x3e\x00\x00\x01\x00\x00\x00\x00", "\x20\x0a\x00\x01", "\x1e\x34\x12\x34\x00\x04\x03\x02\x01", "\xe0\x0a\x00\x01", "\x00\x0a\x00\x09\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, n, r := reliable.ReadHeader(in)
		if r != reliable.DropNone {
			if r != reliable.DropHeaderTruncated || n != 0 {
				t.Fatalf("ReadHeader(%x) = %v, %d", in, r, n)
			}
			return
		}
		if n < 3 || n > reliable.MaxHeaderBytes || n > len(in) {
			t.Fatalf("ReadHeader(%x) length %d", in, n)
		}
		var b [reliable.MaxHeaderBytes]byte
		m := reliable.WriteHeader(b[:], h)
		if m != reliable.HeaderLen(h) || m < reliable.MinHeaderBytes {
			t.Fatalf("WriteHeader(%+v) = %d", h, m)
		}
		h2, m2, r2 := reliable.ReadHeader(b[:m])
		if h2 != h || m2 != m || r2 != reliable.DropNone {
			t.Fatalf("round trip %+v -> %x -> %+v", h, b[:m], h2)
		}
		canonical := m == n && bytes.Equal(b[:m], in[:n])
		minimal := in[0]&0xC1 == 0 && m == n // no stray bits, same length
		if minimal && !canonical {
			t.Fatalf("%x is minimal but re-encodes to %x", in[:n], b[:m])
		}
	})
}

// fuzzConfig is small so that fuzzed packets have many fragments.
func fuzzConfig() reliable.Config {
	c := reliable.DefaultConfig()
	c.MaxPacketSize = 512
	c.FragmentAbove = 24
	c.FragmentSize = 16
	c.MaxFragments = 32
	c.FragmentReassemblyBufferSize = 8
	return c
}

// FuzzReassembly sends packets through random loss, duplication and
// reordering against a model: whatever is delivered is byte-exact and
// delivered at most once, and every packet whose fragments all arrived in
// a short enough span is delivered.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{3, 100, 7, 200, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 255, 0, 0, 0, 0})
	f.Add(bytes.Repeat([]byte{0x5a, 0x13, 0xff, 0x00}, 40))
	f.Fuzz(func(t *testing.T, script []byte) {
		c := fuzzConfig()
		tx, err := reliable.New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		rx, _ := reliable.New(c, nil)
		next := func() byte {
			if len(script) == 0 {
				return 0
			}
			b := script[0]
			script = script[1:]
			return b
		}
		// Up to 8 packets of 0..511 bytes.
		sent := map[uint16][]byte{}
		type dgram struct {
			seq  uint16
			data []byte
		}
		var pool []dgram
		for n := int(next()%8) + 1; n > 0; n-- {
			size := int(binary.LittleEndian.Uint16([]byte{next(), next()})) % c.MaxPacketSize
			payload := payloadRule(uint64(len(sent)), size)
			p, err := tx.Send(payload)
			if err != nil {
				t.Fatal(err)
			}
			sent[p.Sequence()] = payload
			for _, d := range datagrams(t, p) {
				pool = append(pool, dgram{p.Sequence(), d})
			}
		}
		// Deliver: each script byte picks a datagram (dup/reorder), 0xff
		// skips; what is never picked is lost.
		got := map[uint16]int{}
		for len(script) > 0 {
			b := next()
			if b == 0xff {
				continue
			}
			dg := pool[int(b)%len(pool)]
			d, r := rx.Receive(dg.data)
			if r >= reliable.NumDropReasons {
				t.Fatalf("drop reason %d", r)
			}
			if !d.Delivered {
				continue
			}
			want, ok := sent[d.Sequence]
			if !ok || d.Sequence != dg.seq || !bytes.Equal(d.Payload, want) {
				t.Fatalf("delivered sequence %d (%d bytes) is not what was sent", d.Sequence, len(d.Payload))
			}
			if got[d.Sequence]++; got[d.Sequence] > 1 {
				t.Fatalf("sequence %d delivered twice", d.Sequence)
			}
		}
		// Everything again in order: every packet not yet delivered is now.
		for _, dg := range pool {
			if d, _ := rx.Receive(dg.data); d.Delivered {
				if !bytes.Equal(d.Payload, sent[d.Sequence]) {
					t.Fatalf("in-order delivery of %d not byte-exact", d.Sequence)
				}
				got[d.Sequence]++
			}
		}
		for s := range sent {
			if got[s] != 1 {
				t.Fatalf("sequence %d delivered %d times", s, got[s])
			}
		}
		if rx.PoolBuffers() > c.FragmentReassemblyBufferSize {
			t.Fatalf("%d buffers held", rx.PoolBuffers())
		}
	})
}

// FuzzReceive feeds arbitrary datagrams to an endpoint sharing a small
// pool: nothing panics, a delivery lies within what was fed or the
// endpoint's buffer, and the pool share holds.
func FuzzReceive(f *testing.F) {
	f.Add([]byte("\x3e\x00\x00\x01\x00\x00\x00\x00hello"))
	f.Add([]byte("\x01\x05\x00\x00\x01\x20\x05\x00\x05" + "0123456789abcdef"))
	f.Add([]byte("\x01\x05\x00\x01\x01" + "0123"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c := fuzzConfig()
		pool, _ := reliable.NewPool(c, 3, 2)
		e, err := reliable.New(c, pool)
		if err != nil {
			t.Fatal(err)
		}
		// Split the input into datagrams at 0xfe bytes.
		for _, dg := range bytes.Split(in, []byte{0xfe}) {
			d, r := e.Receive(dg)
			if d.Delivered && (r != reliable.DropNone || len(d.Payload) > c.MaxPacketSize) {
				t.Fatalf("delivery %+v with %v", d, r)
			}
			if e.PoolBuffers() > 2 || pool.Free()+e.PoolBuffers() != 3 {
				t.Fatalf("holding %d, %d free", e.PoolBuffers(), pool.Free())
			}
			if len(dg) > 0 && len(dg)%3 == 0 {
				e.Refuse()
			}
		}
		e.Update(0)
		e.Reset()
		if pool.Free() != 3 {
			t.Fatalf("%d free after Reset", pool.Free())
		}
	})
}
