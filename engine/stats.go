package engine

import (
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
)

// ServerDropReason says why the server ignored a datagram that passed the
// codec's checks (codec.DropReason covers those that did not).
type ServerDropReason uint8

// Server drop reasons.
const (
	ServerDropNone ServerDropReason = iota
	// ServerDropNotInToken: none of the server's public addresses is in the
	// connect token.
	ServerDropNotInToken
	// ServerDropAddressConnected: a request or response from an address
	// that already has a client slot.
	ServerDropAddressConnected
	// ServerDropClientIDConnected: the token's client id already has a slot.
	ServerDropClientIDConnected
	// ServerDropTokenOtherAddress: the connect token is pending for the
	// address that first presented it, and this request came from another.
	ServerDropTokenOtherAddress
	// ServerDropTokenConsumed: the connect token has already carried a
	// session (one token, one session).
	ServerDropTokenConsumed
	// ServerDropTokenHistoryFull: the token is new and every entry of the
	// connect-token history holds an unexpired token.
	ServerDropTokenHistoryFull
	// ServerDropTokenBeforeStart: the token expires less than
	// MaxConnectTokenLifetime after the server started, so it may have been
	// issued before the start (the restart rule).
	ServerDropTokenBeforeStart
	// ServerDropMappingTableFull: no room for another encryption mapping.
	ServerDropMappingTableFull
	// ServerDropChallengeDecrypt: a response's challenge token did not
	// decrypt with the server's challenge key.
	ServerDropChallengeDecrypt
	// ServerDropNotConnected: a keep-alive, payload or disconnect from an
	// address with an encryption mapping but no slot yet.
	ServerDropNotConnected
	// ServerDropChallengeMismatch: a response carried a challenge token made
	// for another client's handshake.
	ServerDropChallengeMismatch
	// ServerDropAppBacklog: the application has not polled the shard's
	// events: a payload found the event queue full, or a response was
	// ignored because the event ring could not also hold the connect and
	// the later disconnect event (the client retries).
	ServerDropAppBacklog

	// ServerDropRequestRate: a connection request passed the cheap checks
	// when the server had spent its TokenDecryptsPerSecond budget, so its
	// token was not decrypted.
	ServerDropRequestRate

	// ServerDropTokenTooLong: the connect token expires later than
	// MaxConnectTokenLifetime plus ConnectTokenClockSkew from now (tokens
	// that never expire included), so a backend issued it with a longer
	// lifetime than the restart rule allows for.
	ServerDropTokenTooLong
	// ServerDropTokenNoTimeout: the connect token's timeout is -1 (no
	// timeout) and ServerConfig.AllowNoTimeoutTokens is off.
	ServerDropTokenNoTimeout
	// ServerDropTokenClientLimit: the token is new and its client id
	// already holds PendingTokensPerClientID pending, or
	// TokenHistoryPerClientID in all, of the connect-token history's
	// entries.
	ServerDropTokenClientLimit

	// NumServerDropReasons sizes per-reason counter arrays.
	NumServerDropReasons
)

var serverDropText = [NumServerDropReasons]string{
	ServerDropNone:              "no drop",
	ServerDropNotInToken:        "server address not in connect token",
	ServerDropAddressConnected:  "address already connected",
	ServerDropClientIDConnected: "client id already connected",
	ServerDropTokenOtherAddress: "connect token pending for another address",
	ServerDropTokenConsumed:     "connect token already carried a session",
	ServerDropTokenHistoryFull:  "connect-token history full of unexpired tokens",
	ServerDropTokenBeforeStart:  "connect token may predate the server's start (restart rule)",
	ServerDropMappingTableFull:  "encryption mapping table full",
	ServerDropChallengeDecrypt:  "challenge token failed to decrypt",
	ServerDropNotConnected:      "packet from an address that is not connected",
	ServerDropChallengeMismatch: "challenge token of another client's handshake",
	ServerDropAppBacklog:        "application event queue full",
	ServerDropRequestRate:       "connection request over the token decryption budget",
	ServerDropTokenTooLong:      "connect token expires later than the lifetime allows",
	ServerDropTokenNoTimeout:    "connect token without a timeout",
	ServerDropTokenClientLimit:  "client id holds its share of the connect-token history",
}

func (r ServerDropReason) String() string {
	if r < NumServerDropReasons {
		return serverDropText[r]
	}
	return "unknown"
}

// ServerStats are a server's counters since it was created: Stats returns
// the totals, ShardStats each shard's.
type ServerStats struct {
	// PacketsIn and BytesIn count every datagram read from the conns.
	PacketsIn, BytesIn uint64
	// PacketsOut and BytesOut count datagrams the conns accepted.
	PacketsOut, BytesOut uint64
	// SendFailures counts datagrams a conn did not accept.
	SendFailures uint64
	// ReadErrors counts ReadBatch errors.
	ReadErrors uint64

	// CodecDrops counts datagrams the codec rejected, by reason; it also
	// counts private tokens that could not be read.
	CodecDrops [codec.NumDropReasons]uint64
	// Drops counts datagrams the server ignored after decoding, by reason.
	Drops [NumServerDropReasons]uint64
	// ReliableDrops counts payloads the slots' reliable endpoints refused,
	// by reason (ServerConfig.Reliable; index reliable.DropNone is 0).
	ReliableDrops [reliable.NumDropReasons]uint64

	// HandshakesStarted counts encryption mappings made: requests that
	// passed every check and began a handshake (retries of one handshake
	// count once). Connects counts those that ended with a slot.
	HandshakesStarted uint64
	ChallengesSent    uint64 // connection challenge packets sent
	DeniedSent        uint64 // connection denied packets sent (server full)
	Connects          uint64 // clients given a slot (network and loopback)
	Timeouts          uint64 // slots reset because the client went silent
	// ClientDisconnects counts disconnect packets from clients;
	// ServerDisconnects counts slots reset by the application or Stop.
	ClientDisconnects, ServerDisconnects uint64

	// ShedShift is the kernel shedding of connection requests in force
	// (ServerConfig.DisableRequestShedding): the socket keeps 1 in
	// 2^ShedShift of them (0: all; the largest over the conns).
	// ShedChanges counts adjustments, ShedErrors conns where setting the
	// filter failed (shedding is then off on that conn).
	ShedShift   uint8
	ShedChanges uint64
	ShedErrors  uint64

	// StaleSends counts sends and disconnects for a connection that had
	// ended by the time its shard saw them; SendQueueFull counts those
	// refused with ErrSendQueueFull (default mode).
	StaleSends, SendQueueFull uint64
	// Loops counts shard passes and Parks those that waited for the
	// network (default mode).
	Loops, Parks uint64
	// Connected is the number of clients the shard owns (in the totals,
	// the server's: slots whose disconnect has not been polled included).
	Connected int
	// RecvCalls/RecvPackets and SendCalls/SendPackets are the socket's
	// system calls and datagrams (their ratio is the mean batch size),
	// when it counts them (batchio.StatsReader).
	RecvCalls, RecvPackets, SendCalls, SendPackets uint64
	// KernelDrops is the datagrams the kernel dropped for the socket
	// before the shard could read them: shed connection requests, those
	// over the per-source limit and overflows of its receive queue
	// (batchio.Shedder sockets).
	KernelDrops uint64
	// SourceDrops is the part of KernelDrops that the socket's
	// per-source limit dropped (batchio.Config.SourceLimit): datagrams of
	// sources sending above its rate.
	SourceDrops uint64
	// RecvBatches and SendBatches count the shard's socket reads and
	// writes by the datagrams they moved: bucket k counts batches of 2^k to
	// 2^(k+1)-1 (the last bucket, 64 and more).
	RecvBatches, SendBatches [NumBatchBuckets]uint64
	// TokenHistoryPending and TokenHistoryConsumed are the connect-token
	// history's entries in each state, and TokenHistorySize its size (the
	// server's, in the totals only; entries of expired tokens count until
	// swept, within about a second).
	TokenHistoryPending, TokenHistoryConsumed, TokenHistorySize int
}

// add adds o's counters to s. Gauges add up too: ShedShift takes the
// largest.
func (s *ServerStats) add(o *ServerStats) {
	s.PacketsIn += o.PacketsIn
	s.BytesIn += o.BytesIn
	s.PacketsOut += o.PacketsOut
	s.BytesOut += o.BytesOut
	s.SendFailures += o.SendFailures
	s.ReadErrors += o.ReadErrors
	for i := range s.CodecDrops {
		s.CodecDrops[i] += o.CodecDrops[i]
	}
	for i := range s.Drops {
		s.Drops[i] += o.Drops[i]
	}
	for i := range s.ReliableDrops {
		s.ReliableDrops[i] += o.ReliableDrops[i]
	}
	s.HandshakesStarted += o.HandshakesStarted
	s.ChallengesSent += o.ChallengesSent
	s.DeniedSent += o.DeniedSent
	s.Connects += o.Connects
	s.Timeouts += o.Timeouts
	s.ClientDisconnects += o.ClientDisconnects
	s.ServerDisconnects += o.ServerDisconnects
	s.ShedShift = max(s.ShedShift, o.ShedShift)
	s.ShedChanges += o.ShedChanges
	s.ShedErrors += o.ShedErrors
	s.StaleSends += o.StaleSends
	s.SendQueueFull += o.SendQueueFull
	s.Loops += o.Loops
	s.Parks += o.Parks
	s.RecvCalls += o.RecvCalls
	s.RecvPackets += o.RecvPackets
	s.SendCalls += o.SendCalls
	s.SendPackets += o.SendPackets
	s.KernelDrops += o.KernelDrops
	s.SourceDrops += o.SourceDrops
	for i := range s.RecvBatches {
		s.RecvBatches[i] += o.RecvBatches[i]
		s.SendBatches[i] += o.SendBatches[i]
	}
}

// NumBatchBuckets is the number of batch-size buckets in ServerStats.
const NumBatchBuckets = 7

// shardStats reads shard sh's published counters.
func (sh *shard) readStats(st *ServerStats) {
	sh.statsMu.Lock()
	*st = sh.snapshot
	sh.statsMu.Unlock()
	st.SendQueueFull = sh.sendQueueFull.Load()
	if k, ok := batchio.As[batchio.Shedder](sh.conn); ok {
		st.KernelDrops = k.KernelDrops()
	}
	if l, ok := batchio.As[batchio.SourceLimiter](sh.conn); ok {
		st.SourceDrops = l.SourceDrops()
	}
}

// Stats returns the server's counters: every shard's, as of its last pass
// (one batch, or one idle wake, ago), added up, with the server-wide
// gauges. Any goroutine; it never makes a shard wait.
func (s *Server) Stats() ServerStats {
	var total, st ServerStats
	for _, sh := range s.shards {
		sh.readStats(&st)
		total.add(&st)
	}
	total.Connected = s.adm.connected()
	h := &s.adm.history
	total.TokenHistoryPending = int(h.pending.Load())
	total.TokenHistoryConsumed = int(h.consumed.Load())
	total.TokenHistorySize = h.size()
	return total
}

// ShardStats appends each shard's counters to dst (without allocating when
// dst has room) and returns it. Any goroutine.
func (s *Server) ShardStats(dst []ServerStats) []ServerStats {
	for _, sh := range s.shards {
		var st ServerStats
		sh.readStats(&st)
		dst = append(dst, st)
	}
	return dst
}

// Dropped returns the number of incoming datagrams dropped for any reason.
func (s ServerStats) Dropped() uint64 {
	var n uint64
	for _, c := range s.CodecDrops {
		n += c
	}
	for _, c := range s.Drops {
		n += c
	}
	for _, c := range s.ReliableDrops {
		n += c
	}
	return n
}
