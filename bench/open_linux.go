//go:build linux

package bench

import (
	"fmt"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// openKey opens the server's payload packets to one sampled client: the
// session's server-to-client key, read from the connect token the load
// minted for it, so that the client's worker can time a reply without
// the engine client's queue (two copies and the client's cold state).
type openKey struct {
	params codec.ReadParams
}

func newOpenKey(token []byte, protocolID uint64) (*openKey, error) {
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(token, &ct); err != nil {
		return nil, fmt.Errorf("bench: read the minted token: %w", err)
	}
	k, err := aead.NewPacketKey(ct.ServerToClientKey[:], protocolID)
	if err != nil {
		return nil, fmt.Errorf("bench: server-to-client key: %w", err)
	}
	return &openKey{params: codec.ReadParams{Role: codec.RoleClient, ProtocolID: protocolID, Key: k}}, nil
}

// open opens, counts and times a sampled client's reply in place, as
// Load.receive would after the engine client, and reports whether it did.
// Like account it hands the client one reply a second (fullPathEvery), to
// keep the session, and anything but a payload of the reply's size. A
// reply that fails to open is counted bad, as the engine client would drop
// it. There is no replay window: the client's SeqTracker counts a
// duplicate as one. It does not allocate.
func (w *muxWorker) open(c *loadClient, m *batchio.Message, now time.Time) bool {
	if c.open == nil || !c.up || m.N > len(m.Buf) || now.Sub(c.lastFull) >= fullPathEvery {
		return false
	}
	p := m.Buf[:m.N]
	if _, size, ok := readPayloadHeader(p); !ok || size != w.l.replySize {
		return false
	}
	s := c.shard
	s.mu.Lock()
	if codec.ReadPacket(p, &c.open.params, &w.pkt) != nil {
		s.Bad++
	} else {
		w.l.reply(c, s, w.pkt.Payload, len(w.pkt.Payload), w.pkt.Sequence, now)
	}
	s.mu.Unlock()
	return true
}
