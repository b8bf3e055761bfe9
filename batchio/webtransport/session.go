package webtransport

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/netcode-go/netcode/codec"
	"github.com/quic-go/quic-go"
	wtgo "github.com/quic-go/webtransport-go"
)

// maxSendSize is the largest datagram WriteBatch takes: netcode's largest
// packet.
const maxSendSize = codec.MaxPacketBytes

// sendBufs recycles the copies WriteBatch queues: QUIC copies a datagram
// again when it sends it, so the buffer is free once SendDatagram returns.
var sendBufs = sync.Pool{New: func() any { return new([maxSendSize]byte) }}

// session is one WebTransport session: a client address. Its datagrams
// are read by the goroutine that opened it (the HTTP handler's) and sent
// by its own writer, so a browser that does not keep up blocks only that
// writer, never the server's shard.
type session struct {
	c    *Conn
	wt   *wtgo.Session
	qc   *quic.Conn
	id   uint64
	addr netip.AddrPort
	send chan []byte

	queued int // datagrams in the inbox; guarded by c.in.mu
	rate   bucket

	opened   int64        // c.clock() at open
	lastRecv atomic.Int64 // c.clock() of the last datagram from the browser
	lastSend atomic.Int64 // c.clock() of the last datagram to it
	answered atomic.Bool  // the server has sent it a datagram
	sending  atomic.Bool  // the writer holds a datagram it has not handed to QUIC yet
	closed   atomic.Bool
	closeOne sync.Once
}

// readLoop takes the session's datagrams until it ends.
func (s *session) readLoop() {
	ctx := s.wt.Context()
	for {
		b, err := s.wt.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		s.c.receive(s, b)
	}
}

// writeLoop sends what WriteBatch queued. SendDatagram blocks while the
// QUIC connection's send queue is full (a congested or stalled browser).
func (s *session) writeLoop() {
	done := s.wt.Context().Done()
	for {
		select {
		case <-done:
			s.drain()
			return
		case b := <-s.send:
			s.sending.Store(true)
			err := s.wt.SendDatagram(b)
			s.sending.Store(false)
			sendBufs.Put((*[maxSendSize]byte)(b[:maxSendSize]))
			if err != nil {
				if _, ok := errors.AsType[*quic.DatagramTooLargeError](err); ok {
					s.c.st.sendTooLarge.Add(1)
				} else {
					s.c.st.sendErrors.Add(1)
				}
			}
		}
	}
}

// unsent reports whether the session has datagrams its writer has not
// handed to QUIC.
func (s *session) unsent() bool { return len(s.send) > 0 || s.sending.Load() }

// drain returns the buffers of datagrams that will not be sent.
func (s *session) drain() {
	for {
		select {
		case b := <-s.send:
			sendBufs.Put((*[maxSendSize]byte)(b[:maxSendSize]))
		default:
			return
		}
	}
}

// refuseStreams and refuseUniStreams close the session when the browser
// opens a stream: netcode packets travel only as datagrams, and a stream
// would hold server memory outside every bound.
func (s *session) refuseStreams() {
	str, err := s.wt.AcceptStream(s.wt.Context())
	if err != nil {
		return
	}
	str.CancelRead(0)
	str.CancelWrite(0)
	s.close(closeStream)
}

func (s *session) refuseUniStreams() {
	str, err := s.wt.AcceptUniStream(s.wt.Context())
	if err != nil {
		return
	}
	str.CancelRead(0)
	s.close(closeStream)
}

var closeCodes = [numCloseReasons]wtgo.SessionErrorCode{
	closeIdle:      ErrorCodeIdle,
	closeHandshake: ErrorCodeHandshake,
	closeStream:    ErrorCodeStreamRefused,
}

var closeMessages = [numCloseReasons]string{
	closeIdle:      "idle",
	closeHandshake: "no reply from the server",
	closeStream:    "streams refused: datagrams only",
}

// close ends the session for reason, once; its reader then forgets it.
func (s *session) close(reason closeReason) {
	s.closeOne.Do(func() {
		s.c.st.closed[reason].Add(1)
		s.closed.Store(true)
		s.wt.CloseWithError(closeCodes[reason], closeMessages[reason])
	})
}
