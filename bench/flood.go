//go:build linux

package bench

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"golang.org/x/sys/unix"
)

// floodBatch is how many requests one sendmmsg carries.
const floodBatch = 64

// Flooder sends invalid connection requests as fast as its goroutine can:
// each has a valid header (version, protocol id, an unexpired expire
// timestamp), so the server must try to decrypt its private token, which
// is random bytes and fails. It models the cheapest attack that makes a
// netcode server do cryptographic work.
type Flooder struct {
	// Idle runs the flooding thread under SCHED_IDLE: it then sends with
	// whatever CPU time the other threads of its core leave, so a flooder
	// that shares a core with a load generator (two cores: one for the
	// server, one for everything else) measures the server under flood
	// instead of a starved load generator. Set it before Run.
	Idle bool

	conn batchio.Conn
	msgs []batchio.Message
	raw  *rawSender // a payload flood's spoofing socket, instead of conn
	sent atomic.Uint64
	stop atomic.Bool
	done chan struct{}
}

// NewFlooder opens a socket on bind (port 0) and prepares floodBatch
// distinct requests for server. With gso the socket sends each batch as
// runs of UDP GSO segments where the kernel supports it: several times the
// requests per second of sendmmsg from the same core, the highest rate one
// core can offer (the server still receives them one datagram each).
func NewFlooder(server netip.AddrPort, protocolID uint64, bind netip.Addr, gso bool) (*Flooder, error) {
	conn, err := batchio.Listen(netip.AddrPortFrom(bind, 0), batchio.Config{BatchSize: floodBatch, DisableGSO: !gso})
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
// closes the socket. It returns an error if Idle is set and the thread's
// scheduling policy cannot be changed.
func (f *Flooder) Run() error {
	defer close(f.done)
	if f.raw != nil {
		defer f.raw.close()
	} else {
		defer f.conn.Close()
	}
	runtime.LockOSThread()
	if f.Idle {
		// The thread is not unlocked: it ends with the goroutine, so no
		// other goroutine ever runs on it at idle priority.
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			return fmt.Errorf("bench: flooder SCHED_IDLE: %w", err)
		}
	} else {
		defer runtime.UnlockOSThread()
	}
	for !f.stop.Load() {
		if f.raw != nil {
			f.sent.Add(uint64(f.raw.send()))
			continue
		}
		n, err := f.conn.WriteBatch(f.msgs)
		f.sent.Add(uint64(n))
		if err != nil {
			return err
		}
	}
	return nil
}

// Stop ends Run and waits for it.
func (f *Flooder) Stop() {
	f.stop.Store(true)
	<-f.done
}

// Sent returns how many requests the socket accepted.
func (f *Flooder) Sent() uint64 { return f.sent.Load() }

// DropSink is a UDP socket whose kernel filter drops every datagram before
// it is queued. A flood aimed at it costs the sending core what a flood
// aimed at the server does (the send and loopback delivery run there) but
// gives the server nothing to do: a control that tells the flood's cost to
// the load generator's core from its cost to the server.
type DropSink struct {
	conn *net.UDPConn
}

// NewDropSink opens the sink on bind (port 0).
func NewDropSink(bind netip.Addr) (*DropSink, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(bind, 0)))
	if err != nil {
		return nil, fmt.Errorf("bench: drop sink: %w", err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bench: drop sink: %w", err)
	}
	dropAll := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}} // accept 0 bytes: drop
	prog := unix.SockFprog{Len: uint16(len(dropAll)), Filter: &dropAll[0]}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
	}); err != nil {
		serr = err
	}
	if serr != nil {
		conn.Close()
		return nil, fmt.Errorf("bench: drop sink filter: %w", serr)
	}
	return &DropSink{conn: conn}, nil
}

// Addr returns the sink's address.
func (s *DropSink) Addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Close closes the sink.
func (s *DropSink) Close() error { return s.conn.Close() }
