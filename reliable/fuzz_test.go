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
// delivered at most once. When the packets fit the reassembly window and
// the endpoint has a buffer per slot, sending everything again in order
// then delivers every packet not yet delivered.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{0, 3, 100, 7, 200, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 1, 255, 0, 0, 0, 0})
	f.Add([]byte{1, 20, 0x5a, 0x13, 0xff, 0x00, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	f.Add(bytes.Repeat([]byte{0x5a, 0x13, 0xff, 0x00}, 40))
	f.Fuzz(func(t *testing.T, script []byte) {
		next := func() byte {
			if len(script) == 0 {
				return 0
			}
			b := script[0]
			script = script[1:]
			return b
		}
		c := fuzzConfig()
		flags := next()
		var pool *reliable.Pool // private: never exhausted
		if flags&1 != 0 {
			pool, _ = reliable.NewPool(c, 3, 2)
		}
		tx, err := reliable.New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		rx, err := reliable.New(c, pool)
		if err != nil {
			t.Fatal(err)
		}
		// Up to 24 packets of 0..511 bytes (the window holds 8).
		sent := map[uint16][]byte{}
		type dgram struct {
			seq  uint16
			data []byte
		}
		var all []dgram
		for n := int(next()%24) + 1; n > 0; n-- {
			size := int(binary.LittleEndian.Uint16([]byte{next(), next()})) % c.MaxPacketSize
			payload := payloadRule(uint64(len(sent)), size)
			p, err := tx.Send(payload)
			if err != nil {
				t.Fatal(err)
			}
			sent[p.Sequence()] = payload
			for _, d := range datagrams(t, p) {
				all = append(all, dgram{p.Sequence(), d})
			}
		}
		got := map[uint16]int{}
		receive := func(dg dgram) {
			d, r := rx.Receive(dg.data)
			if r >= reliable.NumDropReasons || (d.Delivered && r != reliable.DropNone) {
				t.Fatalf("drop reason %d, delivered %v", r, d.Delivered)
			}
			if !d.Delivered {
				return
			}
			if d.Sequence != dg.seq || !bytes.Equal(d.Payload, sent[d.Sequence]) {
				t.Fatalf("delivered sequence %d (%d bytes) is not what was sent", d.Sequence, len(d.Payload))
			}
			if got[d.Sequence]++; got[d.Sequence] > 1 {
				t.Fatalf("sequence %d delivered twice", d.Sequence)
			}
		}
		// Each script byte picks a datagram (so duplicates and any order),
		// 0xff skips; what is never picked is lost.
		for len(script) > 0 {
			if b := next(); b != 0xff {
				receive(all[int(b)%len(all)])
			}
		}
		for _, dg := range all {
			receive(dg)
		}
		if pool == nil && len(sent) <= c.FragmentReassemblyBufferSize {
			for s := range sent {
				if got[s] != 1 {
					t.Fatalf("sequence %d delivered %d times", s, got[s])
				}
			}
		}
		if pool != nil && (rx.PoolBuffers() > 2 || pool.Free()+rx.PoolBuffers() != 3) {
			t.Fatalf("holding %d buffers, %d free", rx.PoolBuffers(), pool.Free())
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
