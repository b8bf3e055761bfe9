//go:build linux

package bench

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"golang.org/x/sys/unix"
)

// PayloadFloodBytes is the size of a payload flood's datagrams by default,
// as the F9 finding of issue 25 sent them.
const PayloadFloodBytes = 1119

// NewPayloadFlooder prepares a flood of junk payload packets (a payload
// packet's type byte, then random bytes, which fail decryption) of size
// bytes from the address from (a connected player's, spoofed: a raw IPv4
// socket writes the headers) to server. The server finds a connected
// client for each, tries to decrypt it and drops it. IPv4 only, and root
// (CAP_NET_RAW).
func NewPayloadFlooder(server, from netip.AddrPort, size int) (*Flooder, error) {
	if !server.Addr().Unmap().Is4() || !from.Addr().Unmap().Is4() {
		return nil, errors.New("bench: payload flood: IPv4 only (a raw socket spoofs the source)")
	}
	if size < 2 || size > 65507 {
		return nil, fmt.Errorf("bench: payload flood: size %d; allowed 2 to 65507", size)
	}
	r, err := newRawSender(server, from, size)
	if err != nil {
		return nil, err
	}
	return &Flooder{raw: r, done: make(chan struct{})}, nil
}

// rawSender sends floodBatch prepared IPv4 datagrams per sendmmsg on a raw
// socket with IP_HDRINCL.
type rawSender struct {
	fd   int
	bufs [][]byte
	iovs []unix.Iovec
	hdrs []unix.Mmsghdr
}

const ipv4Header, udpHeader = 20, 8

func newRawSender(server, from netip.AddrPort, size int) (*rawSender, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("bench: payload flood: raw socket (needs CAP_NET_RAW): %w", err)
	}
	// IPPROTO_RAW implies IP_HDRINCL; connect fixes the destination.
	dst := server.Addr().Unmap().As4()
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: dst}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bench: payload flood: connect: %w", err)
	}
	r := &rawSender{fd: fd, bufs: make([][]byte, floodBatch), iovs: make([]unix.Iovec, floodBatch), hdrs: make([]unix.Mmsghdr, floodBatch)}
	src := from.Addr().Unmap().As4()
	total := ipv4Header + udpHeader + size
	for i := range r.bufs {
		b := make([]byte, total)
		b[0], b[8], b[9] = 0x45, 64, unix.IPPROTO_UDP // version 4, 5 words; TTL; UDP
		binary.BigEndian.PutUint16(b[2:], uint16(total))
		copy(b[12:16], src[:])
		copy(b[16:20], dst[:])
		// The kernel fills in the IP checksum and id; a UDP checksum of 0
		// is none (IPv4).
		u := b[ipv4Header:]
		binary.BigEndian.PutUint16(u[0:], from.Port())
		binary.BigEndian.PutUint16(u[2:], server.Port())
		binary.BigEndian.PutUint16(u[4:], uint16(udpHeader+size))
		p := u[udpHeader:]
		if _, err := rand.Read(p); err != nil {
			unix.Close(fd)
			return nil, err
		}
		// A payload packet with an 8-byte sequence number.
		p[0] = byte(codec.ConnectionPayload) | 8<<4
		r.bufs[i] = b
		r.iovs[i] = unix.Iovec{Base: &b[0]}
		r.iovs[i].SetLen(total)
		r.hdrs[i].Hdr.Iov = &r.iovs[i]
		r.hdrs[i].Hdr.SetIovlen(1)
	}
	return r, nil
}

// send makes one sendmmsg and returns how many datagrams it sent.
func (r *rawSender) send() int {
	n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(r.fd), uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)), 0, 0, 0)
	if errno != 0 {
		return 0 // ENOBUFS and the like: try again
	}
	return int(n)
}

func (r *rawSender) close() { unix.Close(r.fd) }

// Player is one netcode client connected from a socket of its own and kept
// connected (a payload every 100 ms) by a goroutine: the address a payload
// flood comes from, as a player turned attacker would send it.
type Player struct {
	conn batchio.Conn
	cl   *engine.Client
	stop chan struct{}
	wg   sync.WaitGroup
}

// ConnectPlayer connects a player with client id id from bind (port 0) to
// server and waits up to 5 s for it to be connected.
func ConnectPlayer(server netip.AddrPort, bind netip.Addr, key []byte, protocolID, id uint64) (*Player, error) {
	conn, err := batchio.Listen(netip.AddrPortFrom(bind, 0), batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("bench: player socket: %w", err)
	}
	cl, err := engine.NewClient(engine.ClientConfig{}, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: protocolID, PrivateKey: key, ClientID: id,
		PublicAddresses: []netip.AddrPort{server}, ExpireSeconds: 3600, TimeoutSeconds: 10})
	if err == nil {
		err = cl.Connect(token, time.Now())
	}
	if err != nil {
		cl.Close()
		conn.Close()
		return nil, fmt.Errorf("bench: player connect: %w", err)
	}
	p := &Player{conn: conn, cl: cl, stop: make(chan struct{})}
	connected := make(chan struct{})
	p.wg.Add(1)
	go p.run(connected)
	select {
	case <-connected:
		return p, nil
	case <-time.After(5 * time.Second):
		p.Close()
		return nil, fmt.Errorf("bench: player did not connect to %v within 5 s", server)
	}
}

func (p *Player) run(connected chan struct{}) {
	defer p.wg.Done()
	buf := make([]byte, codec.MaxPayloadBytes)
	pay := make([]byte, 100)
	var last time.Time
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		now := time.Now()
		p.cl.Update(now)
		for {
			if _, _, ok := p.cl.ReceivePacket(buf); !ok {
				break
			}
		}
		if p.cl.State() == engine.Connected {
			if connected != nil {
				close(connected)
				connected = nil
			}
			if now.Sub(last) >= 100*time.Millisecond {
				p.cl.SendPacket(pay)
				last = now
			}
		}
		p.cl.Wait(now.Add(20 * time.Millisecond))
	}
}

// Addr returns the player's address as the server sees it.
func (p *Player) Addr() netip.AddrPort { return p.conn.LocalAddr() }

// Close stops and closes the player.
func (p *Player) Close() {
	close(p.stop)
	p.conn.Close()
	p.wg.Wait()
	p.cl.Close()
}
