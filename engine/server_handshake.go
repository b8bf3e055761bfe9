package engine

import (
	"log/slog"
	"math"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

// mapping is an encryption mapping: the session keys of an address that
// sent a valid connection request and has not finished the handshake yet.
// When the handshake completes its keys move into the slot.
type mapping struct {
	addr             netip.AddrPort
	sendKey, recvKey *aead.PacketKey
	mac              tokenMAC
	entry            int32  // the token's connect-token history entry
	clientID         uint64 // from the request's token
	// tokenExpire (unix seconds) ends the handshake at the latest, whatever
	// the token's timeout: handshake state never outlives its token.
	tokenExpire uint64
	// expireAt ends the handshake: the token's timeout after the last
	// request. idle is the timeout itself, measured from lastAccess (the
	// last packet sent to or decrypted from the address). Without a timeout
	// (a token timeout of -1) only tokenExpire applies.
	expireAt   time.Time
	idle       time.Duration
	hasTimeout bool
	lastAccess time.Time
}

// mappingTable holds the encryption mappings: a preallocated array, an
// address index and a partition of live and free entries.
type mappingTable struct {
	entries []mapping
	byAddr  oaTable[netip.AddrPort]
	part    partition
}

func (t *mappingTable) init(size int) {
	t.entries = make([]mapping, size)
	t.byAddr.init(size, newAddrHash())
	t.part.init(size)
}

func (m *mapping) expired(now time.Time) bool {
	if unixSeconds(now) >= m.tokenExpire {
		return true
	}
	return m.hasTimeout && (!now.Before(m.expireAt) || !now.Before(m.lastAccess.Add(m.idle)))
}

// lookup returns the live mapping for addr, removing it if it expired.
func (t *mappingTable) lookup(addr netip.AddrPort, now time.Time) (int32, bool) {
	i, ok := t.byAddr.get(addr)
	if !ok {
		return 0, false
	}
	if t.entries[i].expired(now) {
		t.remove(i)
		return 0, false
	}
	return i, true
}

func (t *mappingTable) remove(i int32) {
	m := &t.entries[i]
	t.byAddr.del(m.addr)
	*m = mapping{}
	t.part.release(int(i))
}

// expire removes every expired mapping.
func (t *mappingTable) expire(now time.Time) {
	for k := t.part.n - 1; k >= 0; k-- {
		i := t.part.items[k]
		if t.entries[i].expired(now) {
			t.remove(i)
		}
	}
}

func (t *mappingTable) clear() {
	for t.part.n > 0 {
		t.remove(t.part.items[t.part.n-1])
	}
}

// add creates or refreshes the mapping for addr with the keys of tok, whose
// history entry is entry and expire timestamp expire. A repeated request
// with the same token keeps the keys it already made; a different token
// replaces them. It reports false when the table is full.
func (t *mappingTable) add(addr netip.AddrPort, tok *codec.PrivateToken, mac tokenMAC, entry int32, expire, protocolID uint64, now time.Time) (int32, bool) {
	i, ok := t.lookup(addr, now)
	if !ok {
		if t.part.full() {
			return 0, false
		}
		i = int32(t.part.takeAny())
		t.byAddr.put(addr, i)
		t.entries[i] = mapping{addr: addr}
	}
	m := &t.entries[i]
	if !ok || m.mac != mac {
		send, err1 := aead.NewPacketKey(tok.ServerToClientKey[:], protocolID)
		recv, err2 := aead.NewPacketKey(tok.ClientToServerKey[:], protocolID)
		if err1 != nil || err2 != nil { // cannot happen: keys are 32 bytes
			t.remove(i)
			return 0, false
		}
		m.sendKey, m.recvKey, m.mac = send, recv, mac
	}
	m.entry = entry
	m.tokenExpire = expire
	m.clientID = tok.ClientID
	m.hasTimeout = tok.TimeoutSeconds >= 0
	m.idle = time.Duration(tok.TimeoutSeconds) * time.Second
	m.expireAt = now.Add(m.idle)
	m.lastAccess = now
	return i, true
}

// processPacket handles one datagram from the shard's conn.
func (s *shard) processPacket(pkt []byte, from netip.AddrPort, now time.Time) {
	s.setNow(now)
	s.stats.PacketsIn++
	s.stats.BytesIn += uint64(len(pkt))
	rp := &s.rp
	rp.Now = s.nowUnix
	if len(pkt) > 0 && pkt[0] == 0 {
		rp.Key, rp.Replay = nil, nil
		s.processRequest(pkt, from, now)
		return
	}

	// Choose the receive key: the slot's if the address is connected, else
	// its encryption mapping's, else none (the codec drops the packet).
	slotIdx, connected := s.byAddr.get(from)
	mapIdx := int32(-1)
	switch {
	case connected:
		sl := &s.slots[slotIdx]
		rp.Key, rp.Replay = sl.recvKey, &sl.replay
	default:
		rp.Key, rp.Replay = nil, nil
		if i, ok := s.maps.lookup(from, now); ok {
			mapIdx = i
			rp.Key = s.maps.entries[i].recvKey
		}
	}
	p := &s.pkt
	if err := codec.ReadPacket(pkt, rp, p); err != nil {
		s.stats.CodecDrops[codec.ReasonOf(err)]++
		return
	}
	if mapIdx >= 0 {
		s.maps.entries[mapIdx].lastAccess = now
	}

	switch p.Type {
	case codec.ConnectionResponse:
		s.processResponse(from, connected, mapIdx)
	case codec.ConnectionKeepAlive:
		if !connected {
			s.stats.Drops[ServerDropNotConnected]++
			return
		}
		sl := &s.slots[slotIdx]
		sl.confirmed = true
		sl.lastRecv = now
	case codec.ConnectionPayload:
		if !connected {
			s.stats.Drops[ServerDropNotConnected]++
			return
		}
		sl := &s.slots[slotIdx]
		sl.confirmed = true
		sl.lastRecv = now
		if sl.rel != nil {
			s.relReceive(slotIdx, p.Payload)
		} else if !s.deliver(slotIdx, p.Payload, p.Sequence) {
			s.stats.Drops[ServerDropAppBacklog]++
		}
	case codec.ConnectionDisconnect:
		if !connected {
			s.stats.Drops[ServerDropNotConnected]++
			return
		}
		s.stats.ClientDisconnects++
		s.resetSlot(int(slotIdx), DisconnectClientDisconnected)
	}
}

// processRequest runs the standard's connection request checks in order:
// the codec's cheap checks (size, version, protocol id, expiry), the restart
// rule, the decryption budget, then the codec again to decrypt the token
// (it repeats the cheap checks, a few compares, so that ReadPacket stays the
// one way to a decoded packet), then the server's checks with the
// connect-token history.
func (s *shard) processRequest(pkt []byte, from netip.AddrPort, now time.Time) {
	if err := codec.CheckRequestPacket(pkt, &s.rp); err != nil {
		s.stats.CodecDrops[codec.ReasonOf(err)]++
		return
	}
	// The restart rule and the expiry bound. Every token a run admits
	// expires at most maxLifetime after the moment it was admitted, so at
	// or before the next run's minExpire (its start plus maxLifetime):
	// no token can carry a session in two runs, whatever lifetime the
	// backend issued it with. Equal counts as before the start: a token
	// could have been used in the same second by the run before.
	expire := codec.RequestExpireTimestamp(pkt)
	if expire <= s.minExpire {
		s.stats.Drops[ServerDropTokenBeforeStart]++
		s.logBeforeStart(expire)
		return
	}
	if expire > s.nowUnix+s.maxLifetime {
		s.stats.Drops[ServerDropTokenTooLong]++
		s.logTooLong(expire)
		return
	}
	if !s.decrypts.take(now) {
		s.stats.Drops[ServerDropRequestRate]++
		return
	}
	p := &s.pkt
	if err := codec.ReadPacket(pkt, &s.rp, p); err != nil {
		s.stats.CodecDrops[codec.ReasonOf(err)]++
		return
	}
	tok := &s.priv
	if err := codec.ReadPrivateToken(p.PrivateToken, tok); err != nil {
		r := codec.ReasonOf(err)
		if r == codec.ReasonNone {
			r = codec.ReasonTokenUnreadable
		}
		s.stats.CodecDrops[r]++
		return
	}
	if tok.TimeoutSeconds < 0 && !s.cfg.AllowNoTimeoutTokens {
		s.stats.Drops[ServerDropTokenNoTimeout]++
		return
	}
	if !s.ownAddressIn(tok) {
		s.stats.Drops[ServerDropNotInToken]++
		return
	}
	if _, ok := s.byAddr.get(from); ok {
		s.stats.Drops[ServerDropAddressConnected]++
		return
	}
	if s.adm.idConnected(tok.ClientID) {
		s.stats.Drops[ServerDropClientIDConnected]++
		return
	}
	var mac tokenMAC
	copy(mac[:], p.PrivateToken[codec.PrivateTokenBytes-codec.MACBytes:])
	entry, res := s.adm.presentToken(mac, from, tok.ClientID, p.ExpireTimestamp, s.nowUnix)
	switch res {
	case historyOtherAddress:
		s.stats.Drops[ServerDropTokenOtherAddress]++
		return
	case historyConsumed:
		s.stats.Drops[ServerDropTokenConsumed]++
		return
	case historyFull:
		s.stats.Drops[ServerDropTokenHistoryFull]++
		return
	case historyClientFull:
		s.stats.Drops[ServerDropTokenClientLimit]++
		return
	}
	// As in the reference, a request denied because the server is full
	// leaves its token pending.
	if s.adm.full() {
		s.sendDeniedForToken(from, tok, mac, now)
		return
	}
	started := s.maps.part.n
	mi, ok := s.maps.add(from, tok, mac, entry, p.ExpireTimestamp, s.cfg.ProtocolID, now)
	if !ok {
		s.stats.Drops[ServerDropMappingTableFull]++
		return
	}
	if s.maps.part.n > started {
		s.stats.HandshakesStarted++
	}
	s.sendChallenge(mi, tok, now)
}

// logBeforeStart explains, once per run, why the server ignores tokens
// that expire too soon after its start.
func (s *shard) logBeforeStart(expire uint64) {
	if s.loggedBeforeStart {
		return
	}
	s.loggedBeforeStart = true
	s.log.Warn("netcode server: ignoring connection requests whose connect token expires before the restart rule's bound: "+
		"such a token may have been issued before this server started and used with an earlier run; "+
		"tokens issued with a lifetime of MaxConnectTokenLifetime more than ConnectTokenClockSkew after the start are admitted",
		slog.Time("started", s.srv.startedAt),
		slog.String("max_connect_token_lifetime", s.cfg.MaxConnectTokenLifetime.String()),
		slog.String("clock_skew", ConnectTokenClockSkew.String()),
		slog.Time("min_expire", time.Unix(int64(s.minExpire), 0)),
		slog.Time("token_expire", time.Unix(int64(min(expire, math.MaxInt64)), 0)))
}

// logTooLong explains, once per run, why the server ignores tokens that
// expire too far ahead: a web backend minting longer tokens than
// MaxConnectTokenLifetime would otherwise show only in the metrics.
func (s *shard) logTooLong(expire uint64) {
	if s.loggedTooLong {
		return
	}
	s.loggedTooLong = true
	s.log.Warn("netcode server: ignoring connection requests whose connect token expires later than MaxConnectTokenLifetime plus ConnectTokenClockSkew from now: "+
		"the web backend must issue tokens with at most this lifetime (never-expiring tokens are always refused)",
		slog.String("max_connect_token_lifetime", s.cfg.MaxConnectTokenLifetime.String()),
		slog.String("clock_skew", ConnectTokenClockSkew.String()),
		slog.Time("now", time.Unix(int64(s.nowUnix), 0)),
		slog.Time("token_expire", time.Unix(int64(min(expire, math.MaxInt64)), 0)))
}

// ownAddressIn reports whether one of the server's public addresses is in
// the token. IPv4-mapped IPv6 forms compare equal to IPv4.
func (s *shard) ownAddressIn(tok *codec.PrivateToken) bool {
	for _, a := range tok.Addresses() {
		for _, p := range s.cfg.PublicAddresses {
			if a.Port() == p.Port() && a.Addr().Unmap() == p.Addr().Unmap() {
				return true
			}
		}
	}
	return false
}

// sendChallenge sends a connection challenge to mapping mi: a challenge
// token sealed with the server's challenge key and the next challenge
// sequence, in a packet sealed with the mapping's send key and the global
// sequence (never a session sequence).
func (s *shard) sendChallenge(mi int32, tok *codec.PrivateToken, now time.Time) {
	m := &s.maps.entries[mi]
	s.chal.ClientID = tok.ClientID
	s.chal.UserData = tok.UserData
	if err := codec.WriteChallengeToken(s.chalBuf[:], &s.chal); err != nil {
		return // cannot happen: the buffer is 300 bytes
	}
	cseq := s.challengeSeq
	s.challengeSeq++
	if err := s.challengeKey.Seal(s.chalBuf[:], cseq); err != nil {
		return
	}
	n, err := codec.WriteChallengePacket(s.outBuf(), nextGlobalSequence(), cseq, s.chalBuf[:], m.sendKey)
	if err != nil {
		s.stats.SendFailures++
		return
	}
	s.commit(n, m.addr)
	m.lastAccess = now
	s.stats.ChallengesSent++
}

// sendDeniedForToken answers a request when the server is full. The packet
// is sealed with the token's server-to-client key: the mapping's if the
// address has one for this token, else a key made for this packet.
func (s *shard) sendDeniedForToken(to netip.AddrPort, tok *codec.PrivateToken, mac tokenMAC, now time.Time) {
	if i, ok := s.maps.lookup(to, now); ok && s.maps.entries[i].mac == mac {
		s.sendDenied(to, s.maps.entries[i].sendKey)
		return
	}
	key, err := aead.NewPacketKey(tok.ServerToClientKey[:], s.cfg.ProtocolID)
	if err != nil {
		return
	}
	s.sendDenied(to, key)
}

func (s *shard) sendDenied(to netip.AddrPort, key *aead.PacketKey) {
	n, err := codec.WriteDeniedPacket(s.outBuf(), nextGlobalSequence(), key)
	if err != nil {
		s.stats.SendFailures++
		return
	}
	s.commit(n, to)
	s.stats.DeniedSent++
}

// processResponse runs the standard's connection response checks in order.
// The codec has decrypted the packet with the key of the address (the
// slot's if it is connected, else its mapping's, mapIdx).
func (s *shard) processResponse(from netip.AddrPort, connected bool, mapIdx int32) {
	p := &s.pkt
	if s.challengeKey.Open(p.ChallengeToken, p.ChallengeSequence) != nil {
		s.stats.Drops[ServerDropChallengeDecrypt]++
		return
	}
	if codec.ReadChallengeToken(p.ChallengeToken, &s.chal) != nil {
		s.stats.CodecDrops[codec.ReasonTokenUnreadable]++ // cannot happen: 300 bytes
		return
	}
	// A challenge token is only valid from the address it was sent to: one
	// lifted from another client's handshake (by someone holding that
	// client's keys) must not connect this address under the other id. The
	// reference does not check this; a genuine client always returns its
	// own token, so the check costs peers nothing.
	if mapIdx >= 0 && s.maps.entries[mapIdx].clientID != s.chal.ClientID {
		s.stats.Drops[ServerDropChallengeMismatch]++
		return
	}
	if connected {
		s.stats.Drops[ServerDropAddressConnected]++
		return
	}
	if mapIdx < 0 {
		return // cannot happen: without a slot or mapping there is no key
	}
	m := &s.maps.entries[mapIdx]
	if !s.canAdmit() {
		s.stats.Drops[ServerDropAppBacklog]++
		return
	}
	// The id check and the full check, in that order, and taking the slot
	// happen under the admission lock, so that concurrent shards admit a
	// client id at most once.
	i, res := s.adm.claim(s.chal.ClientID, m.entry, m.mac, s.nowUnix)
	switch res {
	case claimIDConnected:
		s.stats.Drops[ServerDropClientIDConnected]++
		return
	case claimFull:
		s.sendDenied(from, m.sendKey)
		return
	case claimTokenConsumed:
		s.stats.Drops[ServerDropTokenConsumed]++
		return
	}
	sl := &s.slots[i]
	sl.addr = from
	sl.sendKey, sl.recvKey = m.sendKey, m.recvKey
	sl.sequence = 0 // the token's only session
	sl.hasTimeout = m.hasTimeout
	sl.timeout = m.idle
	sl.confirmed = false
	sl.loopback = false
	s.maps.remove(mapIdx)
	s.occupy(int(i), s.chal.ClientID, &s.chal.UserData)
	s.byAddr.put(from, i)
	s.sendKeepAlive(int(i))

	s.log.Info("netcode client connected", slog.Int("client_index", int(i)),
		slog.String("client_id", IDString(sl.clientID)), slog.String("address", from.String()))
}
