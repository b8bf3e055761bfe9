package webtransport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	wtgo "github.com/quic-go/webtransport-go"
)

// clientQueue bounds the datagrams a ClientConn holds each way.
const clientQueue = 256

// ClientConn is the browser's side of one WebTransport session as a
// batchio.Conn, for an engine.Client in tests and load generators that
// play browsers. Its one peer is the server: reads come from the address
// the URL names, and writes to any other address are dropped.
type ClientConn struct {
	sess   *wtgo.Session
	tr     *wtgo.Transport
	server netip.AddrPort
	local  netip.AddrPort

	recv chan []byte
	send chan []byte
	park *batchio.Parker

	closeOnce sync.Once
	closed    atomic.Bool
	wg        sync.WaitGroup

	recvPackets, sendPackets, dropped atomic.Uint64
}

var (
	_ batchio.Conn        = (*ClientConn)(nil)
	_ batchio.Waker       = (*ClientConn)(nil)
	_ batchio.StatsReader = (*ClientConn)(nil)
)

// Dial opens a WebTransport session to rawURL (https://ip:port/path; the
// host must be an IP address, as in a connect token). With certHashes it
// trusts, as a browser given serverCertificateHashes does, exactly the
// certificates whose leaf hashes are listed; without, the system roots.
func Dial(ctx context.Context, rawURL string, certHashes ...[32]byte) (*ClientConn, error) {
	return dial(ctx, rawURL, nil, certHashes)
}

func dial(ctx context.Context, rawURL string, hdr http.Header, certHashes [][32]byte) (*ClientConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("webtransport: dial: %w", err)
	}
	server, err := netip.ParseAddrPort(u.Host)
	if err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("webtransport: dial %q: want https://ip:port/path", rawURL)
	}
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS13}
	if len(certHashes) > 0 {
		hashes := append([][32]byte(nil), certHashes...)
		tlsConf.InsecureSkipVerify = true // replaced by the hash check
		tlsConf.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("webtransport: server sent no certificate")
			}
			h := sha256.Sum256(raw[0])
			for _, want := range hashes {
				if bytes.Equal(h[:], want[:]) {
					return nil
				}
			}
			return errors.New("webtransport: server certificate hash not pinned")
		}
	}
	tr := &wtgo.Transport{TLSClientConfig: tlsConf}
	_, sess, err := tr.Dial(ctx, rawURL, hdr)
	if err != nil {
		tr.Close()
		return nil, fmt.Errorf("webtransport: dial %s: %w", rawURL, err)
	}
	c := &ClientConn{sess: sess, tr: tr, server: server,
		recv: make(chan []byte, clientQueue), send: make(chan []byte, clientQueue),
		park: batchio.NewParker()}
	if a, ok := sess.LocalAddr().(*net.UDPAddr); ok {
		c.local = a.AddrPort()
	}
	// A dual-stack socket ([::]:port) reaches IPv4 servers too; it is
	// reported in the server's family, which is what an engine.Client
	// matches a token's addresses against.
	if ip := c.local.Addr().Unmap(); !ip.IsValid() || ip.IsUnspecified() {
		unspec := netip.IPv6Unspecified()
		if server.Addr().Is4() {
			unspec = netip.IPv4Unspecified()
		}
		c.local = netip.AddrPortFrom(unspec, c.local.Port())
	}
	c.wg.Go(c.readLoop)
	c.wg.Go(c.writeLoop)
	return c, nil
}

func (c *ClientConn) readLoop() {
	ctx := c.sess.Context()
	for {
		b, err := c.sess.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		select {
		case c.recv <- b:
			c.park.Notify()
		default:
			c.dropped.Add(1)
		}
	}
}

func (c *ClientConn) writeLoop() {
	done := c.sess.Context().Done()
	for {
		select {
		case <-done:
			return
		case b := <-c.send:
			if c.sess.SendDatagram(b) != nil {
				c.dropped.Add(1)
			}
			sendBufs.Put((*[maxSendSize]byte)(b[:maxSendSize]))
		}
	}
}

// ReadBatch fills msgs with datagrams from the server.
func (c *ClientConn) ReadBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	n := 0
	for n < len(msgs) {
		select {
		case b := <-c.recv:
			if len(b) > len(msgs[n].Buf) {
				c.dropped.Add(1)
				continue
			}
			msgs[n].N = copy(msgs[n].Buf, b)
			msgs[n].Addr = c.server
			n++
		default:
			c.recvPackets.Add(uint64(n))
			return n, c.ended(n)
		}
	}
	c.recvPackets.Add(uint64(n))
	return n, nil
}

// ended reports the session's end as ErrClosed once nothing is left to
// read.
func (c *ClientConn) ended(n int) error {
	if n == 0 && c.sess.Context().Err() != nil {
		return batchio.ErrClosed
	}
	return nil
}

// WriteBatch queues each datagram to the server; one to another address,
// or beyond the queue, is dropped and counted.
func (c *ClientConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if c.closed.Load() {
		return 0, batchio.ErrClosed
	}
	sent := 0
	for i := range msgs {
		m := &msgs[i]
		if netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port()) != c.server || m.N < 0 || m.N > len(m.Buf) || m.N > maxSendSize {
			c.dropped.Add(1)
			continue
		}
		buf := sendBufs.Get().(*[maxSendSize]byte)
		select {
		case c.send <- buf[:copy(buf[:], m.Buf[:m.N])]:
			sent++
		default:
			sendBufs.Put(buf)
			c.dropped.Add(1)
		}
	}
	c.sendPackets.Add(uint64(sent))
	return sent, nil
}

// Wake ends a WaitRead in progress, or makes the next one return at once.
func (c *ClientConn) Wake() { c.park.Wake() }

// WaitRead blocks until a datagram may be waiting, the deadline, Wake,
// the session's end or Close.
func (c *ClientConn) WaitRead(deadline time.Time) error {
	if c.closed.Load() {
		return batchio.ErrClosed
	}
	_, err := c.park.Wait(deadline, func() bool { return len(c.recv) > 0 }, c.sess.Context().Done())
	return err
}

// LocalAddr is the local UDP address of the session's QUIC connection.
func (c *ClientConn) LocalAddr() netip.AddrPort { return c.local }

// Stats counts datagrams read and sent, and dropped either way.
func (c *ClientConn) Stats() batchio.Stats {
	return batchio.Stats{RecvPackets: c.recvPackets.Load(), SendPackets: c.sendPackets.Load(), SendDropped: c.dropped.Load()}
}

// Done is closed when the session ends (either side closed it, or its
// QUIC connection timed out).
func (c *ClientConn) Done() <-chan struct{} { return c.sess.Context().Done() }

// Close ends the session and its QUIC connection.
func (c *ClientConn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.park.Close()
		c.sess.CloseWithError(0, "")
		c.tr.Close()
		c.wg.Wait()
	})
	return nil
}
