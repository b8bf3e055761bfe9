//go:build linux

package bench

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// floodBatch is how many requests one sendmmsg carries.
const floodBatch = 64

// Flooder sends invalid connection requests as fast as its goroutine can:
// each has a valid header (version, protocol id, an unexpired expire
// timestamp), so the server must try to decrypt its private token, which
// is random bytes and fails. It models the cheapest attack that makes a
// netcode server do cryptographic work.
type Flooder struct {
	conn *batchio.MmsgConn
	msgs []batchio.Message
	sent atomic.Uint64
	stop atomic.Bool
	done chan struct{}
}

// NewFlooder opens a socket on bind (port 0) and prepares floodBatch
// distinct requests for server.
func NewFlooder(server netip.AddrPort, protocolID uint64, bind netip.Addr) (*Flooder, error) {
	conn, err := batchio.ListenMmsg(netip.AddrPortFrom(bind, 0), batchio.MmsgConfig{BatchSize: floodBatch})
	if err != nil {
		return nil, fmt.Errorf("bench: flood socket: %w", err)
	}
	f := &Flooder{conn: conn, msgs: make([]batchio.Message, floodBatch), done: make(chan struct{})}
	expire := uint64(time.Now().Add(time.Hour).Unix())
	var nonce [codec.ConnectTokenNonceBytes]byte
	var token [codec.PrivateTokenBytes]byte
	for i := range f.msgs {
		if _, err := rand.Read(nonce[:]); err != nil {
			conn.Close()
			return nil, err
		}
		if _, err := rand.Read(token[:]); err != nil {
			conn.Close()
			return nil, err
		}
		buf := make([]byte, codec.RequestPacketBytes)
		n, err := codec.WriteRequestPacket(buf, protocolID, expire, nonce[:], token[:])
		if err != nil {
			conn.Close()
			return nil, err
		}
		f.msgs[i] = batchio.Message{Buf: buf, N: n, Addr: server}
	}
	return f, nil
}

// Run floods until Stop, on a goroutine locked to its OS thread, then
// closes the socket.
func (f *Flooder) Run() {
	defer close(f.done)
	defer f.conn.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for !f.stop.Load() {
		n, err := f.conn.WriteBatch(f.msgs)
		f.sent.Add(uint64(n))
		if err != nil {
			return
		}
	}
}

// Stop ends Run and waits for it.
func (f *Flooder) Stop() {
	f.stop.Store(true)
	<-f.done
}

// Sent returns how many requests the socket accepted.
func (f *Flooder) Sent() uint64 { return f.sent.Load() }
