package backend

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// The history lockout (issue 25, item 3): ordinary accounts, each getting
// tokens from this token service at its default rate and presenting them
// from its own address, try to keep every new player out of a game server
// by filling its connect-token history (or its encryption mappings) with
// tokens that never finish a handshake. The simulation runs the real
// Handler and a real manual-mode Server on an in-memory conn with one fake
// clock.
//
// The attackers play their best: they present each token as soon as it is
// minted, present refused ones again on every 100 ms tick ahead of the
// players (so they win every entry a token's expiry frees), and present
// placed ones again every second (keeping their mappings alive). A new
// player arrives every 2 s with a fresh account and one token, and
// retries at 10 Hz for 10 s as a client does. A lockout is a measuring
// window of 60 s in which no player gets a challenge. The server's
// decryption budget is off (see newLockoutSim).

const (
	lockoutTick    = 100 * time.Millisecond
	lockoutWarmup  = 45 * time.Second // past the first token lifetime and the restart rule
	lockoutWindow  = 60 * time.Second
	lockoutArrival = 2 * time.Second
	lockoutRetry   = 10 * time.Second
)

var lockoutServer = netip.MustParseAddrPort("203.0.113.7:40000")

type lockoutToken struct {
	req    []byte
	expire uint64
	placed bool
}

type lockoutPlayer struct {
	addr  netip.AddrPort
	req   []byte
	until time.Time
}

// lockoutSim is one run: accounts attackers against a server of slots.
type lockoutSim struct {
	t       testing.TB
	clock   *fakeClock
	handler *Handler
	conn    *batchiotest.Conn
	srv     *engine.Server
	refused uint64 // the server's drops that leave no history entry, so far
}

func newLockoutSim(t testing.TB, slots int) *lockoutSim {
	clock := newFakeClock()
	conn := batchiotest.NewConn(lockoutServer)
	srv, err := engine.NewServer(engine.ServerConfig{
		ProtocolID: testProtocol, PrivateKey: testKey, MaxClients: slots,
		Manual: true, Clock: clock.Now,
		// Only the history decides: attackers holding many refused tokens
		// present them 10 times a second, a request flood that can spend
		// the decryption budget, which forged requests spend as well
		// without any account (the budget and shedding answer floods).
		TokenDecryptsPerSecond: -1,
	}, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := Config{
		ProtocolID: testProtocol, PrivateKey: testKey, Authenticate: idAuth,
		Directory: mustStatic(t, lockoutServer.String()), Now: clock.Now,
	}
	if os.Getenv("NETCODE_LOCKOUT_OLD_RATE") != "" {
		cfg.RateLimit = RateLimit{PerSecond: 1, Burst: 5} // the defaults before issue 25
	}
	h := mustHandler(t, cfg)
	return &lockoutSim{t: t, clock: clock, handler: h, conn: conn, srv: srv}
}

// mint asks the token service for a token for account id and returns the
// connection request a client would send with it, or nil when refused.
func (s *lockoutSim) mint(id uint64) ([]byte, uint64) {
	r := httptest.NewRequest(http.MethodPost, "/token", nil)
	r.RemoteAddr = "127.0.0.1:5555"
	r.Header.Set("X-Test-Client", strconv.FormatUint(id, 10))
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		return nil, 0
	}
	var resp TokenResponse
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		s.t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(resp.ConnectToken)
	if err != nil {
		s.t.Fatal(err)
	}
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(raw, &ct); err != nil {
		s.t.Fatal(err)
	}
	req := make([]byte, codec.RequestPacketBytes)
	if _, err := codec.WriteRequestPacket(req, ct.ProtocolID, ct.ExpireTimestamp, ct.Nonce[:], ct.PrivateData[:]); err != nil {
		s.t.Fatal(err)
	}
	return req, ct.ExpireTimestamp
}

// present delivers one request and reports whether the server kept the
// token (a history entry: no drop other than a full mapping table) and
// whether it answered.
func (s *lockoutSim) present(from netip.AddrPort, req []byte) (kept, answered bool) {
	s.conn.Push(from, req)
	if err := s.srv.Update(s.clock.Now()); err != nil {
		s.t.Fatal(err)
	}
	st := s.srv.Stats()
	var refused uint64
	for r, n := range st.Drops {
		if engine.ServerDropReason(r) != engine.ServerDropMappingTableFull {
			refused += n
		}
	}
	for _, n := range st.CodecDrops {
		refused += n
	}
	kept = refused == s.refused
	s.refused = refused
	for _, d := range s.conn.Sent() {
		if d.Addr == from {
			answered = true
		}
	}
	return kept, answered
}

// run plays accounts attackers and returns how many of the players who
// arrived in the measuring window got a challenge, and how many arrived.
func (s *lockoutSim) run(accounts int) (admitted, arrived int) {
	start := s.clock.Now()
	held := make([][]lockoutToken, accounts)
	var players []*lockoutPlayer
	nextPlayer := uint64(1 << 40)
	end := lockoutWarmup + lockoutWindow
	for tick := 0; time.Duration(tick)*lockoutTick < end; tick++ {
		s.clock.Advance(lockoutTick)
		now := s.clock.Now()
		unix := uint64(now.Unix())
		elapsed := now.Sub(start)
		for k := range accounts {
			addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(k >> 8), byte(k)}), 5000)
			mine := held[k][:0]
			for _, tok := range held[k] {
				if tok.expire > unix {
					mine = append(mine, tok)
				}
			}
			onPhase := tick%10 == k%10
			if onPhase {
				if req, exp := s.mint(uint64(k + 1)); req != nil {
					mine = append(mine, lockoutToken{req: req, expire: exp})
				}
			}
			for i := range mine {
				if !mine[i].placed || onPhase {
					kept, _ := s.present(addr, mine[i].req)
					mine[i].placed = mine[i].placed || kept
				}
			}
			held[k] = mine
		}
		if tick%int(lockoutArrival/lockoutTick) == 0 {
			nextPlayer++
			req, _ := s.mint(nextPlayer)
			if req == nil {
				s.t.Fatal("the token service refused a new player")
			}
			p := &lockoutPlayer{
				addr:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{100, 64, byte(nextPlayer >> 8), byte(nextPlayer)}), 6000),
				req:   req,
				until: now.Add(lockoutRetry),
			}
			if elapsed >= lockoutWarmup && elapsed+lockoutRetry <= end {
				arrived++
				players = append(players, p)
			} else {
				p.until = now // outside the window: not played
			}
		}
		live := players[:0]
		for _, p := range players {
			if now.After(p.until) {
				continue
			}
			if _, answered := s.present(p.addr, p.req); answered {
				admitted++
				continue
			}
			live = append(live, p)
		}
		players = live
	}
	return admitted, arrived
}

// lockedOut reports whether accounts attackers keep every new player out
// of a fresh server of slots.
func lockedOut(t testing.TB, slots, accounts int) bool {
	admitted, arrived := newLockoutSim(t, slots).run(accounts)
	t.Logf("%d slots, %d accounts: %d of %d new players got in", slots, accounts, admitted, arrived)
	return admitted == 0
}

// accountsToLockOut finds the fewest accounts that keep every new player
// out (a bisection; the outcome grows with the accounts).
func accountsToLockOut(t testing.TB, slots int) int {
	lo, hi := 0, 1 // lo: not enough
	for !lockedOut(t, slots, hi) {
		lo, hi = hi, hi*2
		if hi > 4096 {
			t.Fatalf("%d slots: 4096 accounts do not lock players out", slots)
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if lockedOut(t, slots, mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// TestLockoutAccounts measures how many accounts a history lockout takes,
// with the token service's and the server's defaults (the README's
// figures). It takes a few minutes: NETCODE_LOCKOUT=1 runs it;
// NETCODE_LOCKOUT_OLD_RATE=1 gives the token service its former rate (1/s,
// burst 5), to see the server's share.
func TestLockoutAccounts(t *testing.T) {
	if os.Getenv("NETCODE_LOCKOUT") == "" {
		t.Skip("a measurement: NETCODE_LOCKOUT=1 runs it")
	}
	for _, slots := range []int{16, 256} {
		t.Logf("RESULT %d slots: %d accounts keep every new player out", slots, accountsToLockOut(t, slots))
	}
}

// TestLockoutNeedsManyAccounts: 128 accounts, which kept every new player
// out of a 16-slot server 25 times over before the history's minimum
// size, per-id cap and the token service's rate, no longer do.
func TestLockoutNeedsManyAccounts(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of simulation")
	}
	if lockedOut(t, 16, 128) {
		t.Fatal("128 accounts keep every new player out of a 16-slot server")
	}
}
