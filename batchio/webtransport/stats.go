package webtransport

import "sync/atomic"

// refuseReason is why a QUIC connection or a session was refused.
type refuseReason uint8

const (
	refuseNone refuseReason = iota
	refuseRate
	refuseRateIP
	refuseIPTableFull
	refuseMaxSessions
	refusePending
	refuseOrigin
	refuseClosed
	numRefuseReasons
)

// dropReason is why a datagram was dropped.
type dropReason uint8

const (
	dropNone        dropReason = iota
	dropOversized              // longer than MaxDatagramSize
	dropRate                   // over the session's DatagramsPerSecond
	dropSessionFull            // the session's share of the inbox is full
	dropInboxFull              // the inbox is full
	dropTruncated              // longer than the reader's buffer
	dropClosed                 // the session closed before it was read
	numDropReasons
)

// closeReason is why the server closed a session.
type closeReason uint8

const (
	closeIdle      closeReason = iota // nothing from the browser or the server for IdleTimeout
	closeHandshake                    // no reply from the server within HandshakeTimeout
	closeStream                       // the browser opened a stream
	numCloseReasons
)

// Stats are a Conn's counters (TransportStats), beyond the socket
// counters that Stats reports.
type Stats struct {
	// Sessions is the open sessions, Pending those the server has not
	// sent a datagram to yet, Connections the QUIC connections.
	Sessions, Pending, Connections int
	// Accepted counts sessions opened.
	Accepted uint64

	// Refused counts QUIC connections and sessions turned away: over the
	// overall or the per-IP rate, the per-IP table full, MaxSessions,
	// MaxPendingSessions, an origin not allowed, the conn closed.
	RefusedRate, RefusedRateIP, RefusedIPTableFull uint64
	RefusedMaxSessions, RefusedPending             uint64
	RefusedOrigin, RefusedClosed                   uint64

	// Dropped counts received datagrams dropped: longer than
	// MaxDatagramSize, over the session's rate, over its share of the
	// inbox, the inbox full, longer than the reader's buffer, or read
	// after their session closed.
	DroppedOversized, DroppedRate, DroppedSessionFull uint64
	DroppedInboxFull, DroppedTruncated, DroppedClosed uint64

	// Closed counts sessions the server closed: silent for IdleTimeout,
	// unanswered for HandshakeTimeout, or for opening a stream
	// (StreamsRefused).
	ClosedIdle, ClosedHandshake, StreamsRefused uint64

	// Send drops: to an address that is no session's (SendNoSession),
	// the session's SendQueue full (SendQueueFull), larger than the
	// QUIC path allows (SendTooLarge), or a send error (SendErrors).
	SendNoSession, SendQueueFull, SendTooLarge, SendErrors uint64
}

type counters struct {
	refused [numRefuseReasons]atomic.Uint64
	dropped [numDropReasons]atomic.Uint64
	closed  [numCloseReasons]atomic.Uint64

	accepted                                   atomic.Uint64
	recvPackets, sendPackets, waits            atomic.Uint64
	sendNoSession, sendQueueFull, sendTooLarge atomic.Uint64
	sendErrors                                 atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Accepted:           c.accepted.Load(),
		RefusedRate:        c.refused[refuseRate].Load(),
		RefusedRateIP:      c.refused[refuseRateIP].Load(),
		RefusedIPTableFull: c.refused[refuseIPTableFull].Load(),
		RefusedMaxSessions: c.refused[refuseMaxSessions].Load(),
		RefusedPending:     c.refused[refusePending].Load(),
		RefusedOrigin:      c.refused[refuseOrigin].Load(),
		RefusedClosed:      c.refused[refuseClosed].Load(),
		DroppedOversized:   c.dropped[dropOversized].Load(),
		DroppedRate:        c.dropped[dropRate].Load(),
		DroppedSessionFull: c.dropped[dropSessionFull].Load(),
		DroppedInboxFull:   c.dropped[dropInboxFull].Load(),
		DroppedTruncated:   c.dropped[dropTruncated].Load(),
		DroppedClosed:      c.dropped[dropClosed].Load(),
		ClosedIdle:         c.closed[closeIdle].Load(),
		ClosedHandshake:    c.closed[closeHandshake].Load(),
		StreamsRefused:     c.closed[closeStream].Load(),
		SendNoSession:      c.sendNoSession.Load(),
		SendQueueFull:      c.sendQueueFull.Load(),
		SendTooLarge:       c.sendTooLarge.Load(),
		SendErrors:         c.sendErrors.Load(),
	}
}
