package webtransport

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/netcode-go/netcode/batchio"
)

// FuzzReader drives the reader path (inbox push, read, deliver) with a
// script of session opens and closes, datagrams and reads of any batch
// and buffer size, and checks that nothing is lost or made up: every
// datagram the inbox took is read once, in its session's order, from its
// session's address, unless it was dropped and counted; no session holds
// more than its share.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 1, 0, 5, 2, 4, 200})
	f.Add([]byte{0, 0, 1, 0, 3, 1, 1, 2, 2, 1, 1, 3, 0, 2, 8, 0})
	f.Add(bytes.Repeat([]byte{1, 0, 9}, 40))
	f.Add([]byte{0, 1, 0, 255, 1, 0, 255, 2, 1, 10, 3, 0, 2, 9, 255})
	f.Fuzz(func(t *testing.T, script []byte) {
		const size, share = 16, 4
		in := newInbox(size, share)
		var sessions []*session
		sent := map[*session][][]byte{} // accepted, not yet read or dropped
		var drops [numDropReasons]uint64
		seq := 0
		next := func() int {
			if len(script) == 0 {
				return 0
			}
			b := script[0]
			script = script[1:]
			return int(b)
		}
		for len(script) > 0 {
			switch next() % 4 {
			case 0:
				if len(sessions) < 8 {
					s := &session{addr: nextSessionAddr()}
					sessions = append(sessions, s)
				}
			case 1:
				if len(sessions) == 0 {
					continue
				}
				s := sessions[next()%len(sessions)]
				b := make([]byte, next()*5) // 0 to 1275 bytes
				binary.AppendUvarint(b[:0], uint64(seq))
				seq++
				full := s.queued >= share || in.n == size
				r := in.push(s, b)
				if full != (r != dropNone) {
					t.Fatalf("push: reason %d with queued %d/%d, inbox %d/%d", r, s.queued, share, in.n, size)
				}
				if r == dropNone {
					sent[s] = append(sent[s], b)
				}
			case 2:
				msgs := batchio.NewMessages(next()%9, next()*6)
				before := drops
				accepted := 0
				for _, q := range sent {
					accepted += len(q)
				}
				n := in.read(msgs, &drops)
				for _, m := range msgs[:n] {
					var s *session
					for _, c := range sessions {
						if c.addr == m.Addr {
							s = c
						}
					}
					if _, ok := sessionID(m.Addr); !ok || s == nil || s.closed.Load() {
						t.Fatalf("delivered from %v: no open session", m.Addr)
					}
					// The datagram is the session's oldest not dropped.
					j := 0
					for j < len(sent[s]) && !bytes.Equal(sent[s][j], m.Buf[:m.N]) {
						j++
					}
					if j == len(sent[s]) {
						t.Fatalf("session %v: delivered %d bytes it never sent", m.Addr, m.N)
					}
					sent[s] = sent[s][j+1:]
				}
				trimSent(t, &in, sent)
				left := 0
				for _, q := range sent {
					left += len(q)
				}
				dropped := 0
				for r := range drops {
					dropped += int(drops[r] - before[r])
				}
				if accepted != left+n+dropped {
					t.Fatalf("%d datagrams queued; then %d read, %d dropped, %d left", accepted, n, dropped, left)
				}
			case 3:
				if len(sessions) == 0 {
					continue
				}
				sessions[next()%len(sessions)].closed.Store(true)
			}
			for _, s := range sessions {
				if s.queued < 0 || s.queued > share {
					t.Fatalf("session queued %d; share %d", s.queued, share)
				}
			}
			if in.n < 0 || in.n > size {
				t.Fatalf("inbox holds %d; size %d", in.n, size)
			}
		}
	})
}

// trimSent drops from sent the datagrams the inbox no longer holds (dropped
// when read), after checking that what it holds is, per session, a tail
// of what was sent.
func trimSent(t *testing.T, in *inbox, sent map[*session][][]byte) {
	held := map[*session][][]byte{}
	for i := range in.n {
		e := in.q[(in.head+i)%len(in.q)]
		held[e.s] = append(held[e.s], e.b)
	}
	for s, q := range sent {
		h := held[s]
		if len(h) > len(q) {
			t.Fatalf("inbox holds %d datagrams of a session that sent %d", len(h), len(q))
		}
		tail := q[len(q)-len(h):]
		for i := range h {
			if !bytes.Equal(h[i], tail[i]) {
				t.Fatal("inbox holds a datagram out of order")
			}
		}
		sent[s] = tail
	}
}

// FuzzSessionAddr: only addresses sessionAddr makes parse as session
// addresses, and they parse back to their id.
func FuzzSessionAddr(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}, uint16(1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}, uint16(1))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7}, uint16(1))
	f.Fuzz(func(t *testing.T, ip []byte, port uint16) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		ap := netip.AddrPortFrom(a, port)
		id, ok := sessionID(ap)
		if !ok {
			return
		}
		if sessionAddr(id) != ap || id == 0 || !SessionPrefix.Contains(a) {
			t.Fatalf("%v parsed as session %d, whose address is %v", ap, id, sessionAddr(id))
		}
	})
}
