package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// The soak: players come and go for a long time over a lossy, jittery
// simulated network, and nothing the server keeps per connection may
// accumulate. It runs for a wall-clock duration (NETCODE_SOAK_DURATION, 60 s
// by default; scripts/soak.sh runs it longer) and is skipped by -short.

const (
	soakDefaultDuration = 60 * time.Second
	soakSeats           = 32  // players at a time
	soakMaxClients      = 64  // room for the seats and the slots of players who vanished
	soakTokenHistory    = 512 // fills and is swept many times
	soakTimeoutSeconds  = 3
	soakStep            = 10 * time.Millisecond // fake time per step
	soakSendInterval    = 50 * time.Millisecond // 20 Hz payloads while playing
	soakSamples         = 40                    // drain-and-measure points
	soakMaxDrainSteps   = 1500                  // 15 s of fake time to empty the server
)

type soakState uint8

const (
	soakIdle soakState = iota
	soakConnecting
	soakPlaying
	soakLeaving
)

// soakSeat is a place for one player: it connects a new client with a
// fresh token from a fresh address, plays, leaves (with disconnect packets
// or by vanishing) and after a pause is taken by the next player.
type soakSeat struct {
	state    soakState
	at       time.Time // idle: when to join; playing: when to leave; leaving: when the socket closes
	lastSend time.Time
	conn     *batchiotest.SimConn
	client   *Client
	id       uint64
	next     uint64 // the player's next payload number
}

type soakCounts struct {
	sessions, connected, failed, disconnects, vanishes, lost uint64
	sent, echoes                                             uint64
}

type soakSample struct {
	wall                 time.Duration
	fake                 time.Duration
	sessions             uint64
	heapInuse, heapAlloc uint64
	goroutines           int
	tokens               int
}

// soakLeak is where NETCODE_SOAK_LEAK_BYTES puts memory on purpose (so
// many bytes per session, never freed), to check that the heap criterion
// catches a per-connection leak.
var soakLeak [][]byte

type soak struct {
	t         *testing.T
	now       time.Time
	start     time.Time
	network   *batchiotest.MemNetwork
	srv       *Server
	public    netip.AddrPort
	rng       *rand.Rand
	seats     []soakSeat
	admitting bool
	nextID    uint64
	leakBytes int
	c         soakCounts
	buf, pbuf []byte
	// Maxima seen at any step.
	maxConnected, maxMaps, maxTokens int
}

func soakDuration(t *testing.T) time.Duration {
	d := soakDefaultDuration
	if s := os.Getenv("NETCODE_SOAK_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 {
			t.Fatalf("NETCODE_SOAK_DURATION=%q: want a positive duration such as 90s or 10m", s)
		}
	}
	// Leave the last drain and the report room before go test's deadline.
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 30*time.Second; left < d {
			t.Logf("go test's -timeout leaves %v: soaking for that instead of %v", left.Round(time.Second), d)
			d = left
		}
	}
	if d < 4*time.Second {
		t.Skipf("soak duration %v too short", d)
	}
	return d
}

// TestSoak: soakSeats players join, play at 20 Hz and leave, continuously,
// over a network with 10% loss, 50 ms latency and 50 ms jitter, each new
// player a new Client with a fresh token, id and address; half leave with
// disconnect packets, half vanish and are timed out. soakSamples times the
// server is drained (no new players) and must be back at its baseline: no
// slot, address, client id or encryption mapping in use. Throughout, the
// token-reuse table stays within its size and the encryption mappings
// within theirs, and at the drain points the goroutine count stays at its
// start and the heap is flat: the largest in-use heap of the last quarter
// of the run is within 10% + 1 MiB of the largest of the second quarter.
//
// The work is one step (every seat and the server, on a fake clock) after
// another on this goroutine until the wall-clock duration is up, so -race
// makes the run simulate less time, not take longer.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	dur := soakDuration(t)
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	s := &soak{
		t: t, now: time.Unix(1_800_000_000, 0), network: network,
		rng: rand.New(rand.NewPCG(2026, 1)), seats: make([]soakSeat, soakSeats), nextID: 1 << 40,
		buf: make([]byte, codec.MaxPayloadBytes), pbuf: make([]byte, faultPayloadLen),
	}
	if v := os.Getenv("NETCODE_SOAK_LEAK_BYTES"); v != "" {
		if s.leakBytes, err = strconv.Atoi(v); err != nil {
			t.Fatalf("NETCODE_SOAK_LEAK_BYTES=%q: %v", v, err)
		}
	}
	s.now = s.now.Add(-srvStartGrace) // the server starts before the tokens
	s.start = s.now
	sconn := s.simConn(netip.MustParseAddrPort("10.0.0.1:40000"), 1)
	s.public = sconn.LocalAddr()
	s.srv, err = NewServer(ServerConfig{ProtocolID: 0x50a4, PrivateKey: testPrivateKey, MaxClients: soakMaxClients,
		testHistorySize: soakTokenHistory, Manual: true, Clock: func() time.Time { return s.now }}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	s.now = s.now.Add(srvStartGrace)
	defer s.srv.Close()

	goroutines := runtime.NumGoroutine()
	wallStart := time.Now()
	var samples []soakSample
	steps := 0
	for k := range soakSamples {
		epochEnd := wallStart.Add(dur * time.Duration(k+1) / soakSamples)
		s.admitting = true
		for time.Now().Before(epochEnd) {
			s.step()
			steps++
		}
		// Drain: no new players; everyone leaves as planned; the server
		// must return to its baseline.
		s.admitting = false
		drained := false
		for range soakMaxDrainSteps {
			s.step()
			steps++
			if drained = s.empty(); drained {
				break
			}
		}
		if !drained {
			t.Fatalf("sample %d: not back to baseline after %v of fake time: %s", k, soakStep*soakMaxDrainSteps, s.residue())
		}
		if t.Failed() {
			t.FailNow()
		}
		samples = append(samples, s.sample(wallStart))
		if g := samples[k].goroutines; g > goroutines {
			t.Fatalf("sample %d: %d goroutines, %d at the start", k, g, goroutines)
		}
	}

	st := s.srv.Stats()
	wall := time.Since(wallStart)
	fake := s.now.Sub(s.start)
	t.Logf("%v wall, %v simulated in %d steps (%.0f steps/s)", wall.Round(time.Millisecond), fake.Round(time.Second), steps, float64(steps)/wall.Seconds())
	t.Logf("sessions %d: connected %d, failed to connect %d, left with disconnect packets %d, vanished %d, lost while playing %d",
		s.c.sessions, s.c.connected, s.c.failed, s.c.disconnects, s.c.vanishes, s.c.lost)
	t.Logf("payloads sent %d, echoes %d (%.3f; 10%% loss each way gives about 0.81)", s.c.sent, s.c.echoes, float64(s.c.echoes)/float64(max(s.c.sent, 1)))
	t.Logf("server: connects %d, client disconnects %d, timeouts %d, denied %d; max slots %d/%d, max mappings %d/%d, max token history entries %d/%d",
		st.Connects, st.ClientDisconnects, st.Timeouts, st.DeniedSent,
		s.maxConnected, soakMaxClients, s.maxMaps, s.srv.cfg.MaxEncryptionMappings, s.maxTokens, soakTokenHistory)
	drops := ""
	for r, n := range st.CodecDrops {
		if n > 0 {
			drops += fmt.Sprintf(" %v: %d;", codec.DropReason(r), n)
		}
	}
	for r, n := range st.Drops {
		if n > 0 {
			drops += fmt.Sprintf(" %v: %d;", ServerDropReason(r), n)
		}
	}
	t.Logf("server drops (%d):%s", st.Dropped(), drops)
	for i, x := range samples {
		if i%4 == 0 || i == len(samples)-1 {
			t.Logf("sample %2d at %6v (%7v simulated): %6d sessions, heap in use %6.2f MiB (alloc %6.2f MiB), goroutines %d, token history entries %d",
				i, x.wall.Round(time.Millisecond), x.fake.Round(time.Second), x.sessions,
				float64(x.heapInuse)/(1<<20), float64(x.heapAlloc)/(1<<20), x.goroutines, x.tokens)
		}
	}

	// Every connection ended exactly once, and none for lack of room.
	if st.Connects != st.ClientDisconnects+st.Timeouts || st.ServerDisconnects != 0 {
		t.Fatalf("%d connects but %d client disconnects + %d timeouts (+%d server disconnects)",
			st.Connects, st.ClientDisconnects, st.Timeouts, st.ServerDisconnects)
	}
	if s.c.connected == 0 || s.c.echoes == 0 {
		t.Fatal("no traffic")
	}
	if s.c.lost != 0 {
		t.Fatalf("%d players lost their connection while playing", s.c.lost)
	}
	// 10% loss and a 3 s handshake budget: a failed connect is a fluke
	// (each needs dozens of losses in a row), not a pattern.
	if s.c.failed*100 > s.c.sessions {
		t.Fatalf("%d of %d sessions failed to connect", s.c.failed, s.c.sessions)
	}
	if st.DeniedSent != 0 {
		t.Fatalf("%d connection requests denied: the server filled up", st.DeniedSent)
	}
	if n := st.Drops[ServerDropTokenHistoryFull] + st.Drops[ServerDropMappingTableFull]; n != 0 {
		t.Fatalf("%d requests ignored for a full token history or mapping table", n)
	}
	// Tokens live 30 s: over a longer run the history must have reclaimed
	// expired entries for new tokens many times over.
	if s.c.sessions <= soakTokenHistory && s.now.Sub(s.start) > time.Minute {
		t.Fatalf("only %d sessions in %v simulated; the history was never reused", s.c.sessions, s.now.Sub(s.start))
	}

	// The heap at the drain points, where the server is empty and every
	// player gone: the second quarter is warmed up (every table, queue and
	// free list has grown to its working size); the last quarter must not
	// be bigger, up to noise. Two bounds: 10% + 1 MiB, and 256 KiB + 32
	// bytes per session in between (a leak of even 100 bytes a connection
	// breaks the second one in a 60 s run; the heap is otherwise flat to
	// the byte).
	q := len(samples) / 4
	peak := func(xs []soakSample) uint64 {
		var m uint64
		for _, x := range xs {
			m = max(m, x.heapInuse)
		}
		return m
	}
	second, last := peak(samples[q:2*q]), peak(samples[3*q:])
	limit := second + second/10 + 1<<20
	sessionsBetween := samples[len(samples)-1].sessions - samples[2*q-1].sessions
	t.Logf("heap in use: second quarter peak %.2f MiB, last quarter peak %.2f MiB (limit %.2f MiB), %+d bytes over %d sessions",
		float64(second)/(1<<20), float64(last)/(1<<20), float64(limit)/(1<<20), int64(last)-int64(second), sessionsBetween)
	if last > limit {
		t.Fatalf("heap grew from %.2f MiB to %.2f MiB over %d sessions: more than 10%% + 1 MiB", float64(second)/(1<<20), float64(last)/(1<<20), sessionsBetween)
	}
	if perSession := 256<<10 + 32*sessionsBetween; last > second+perSession {
		t.Fatalf("heap grew by %d bytes over %d sessions: more than 256 KiB + 32 bytes a session", last-second, sessionsBetween)
	}
}

// simConn opens a conn on the network behind the simulator.
func (s *soak) simConn(addr netip.AddrPort, seed uint64) *batchiotest.SimConn {
	c, err := s.network.Listen(addr)
	if err != nil {
		s.t.Fatal(err)
	}
	sc, err := batchiotest.NewSimConn(c, batchiotest.SimConfig{Latency: 50 * time.Millisecond, Jitter: 50 * time.Millisecond,
		Loss: 0.1, Seed: seed}, func() time.Time { return s.now })
	if err != nil {
		s.t.Fatal(err)
	}
	return sc
}

// step advances the fake clock by soakStep and runs every seat and the
// server (which echoes every payload).
func (s *soak) step() {
	s.now = s.now.Add(soakStep)
	for i := range s.seats {
		s.runSeat(i)
	}
	srv := s.srv
	srv.Update(s.now)
	srv.Poll(s.echo)
	// The bounds, at every step. Every disconnect has been polled, so the
	// admission state and the shard agree.
	connected := srv.NumConnectedClients()
	if a := srv.shard0().active.n; a != connected || connected > soakMaxClients {
		s.t.Fatalf("%d slots in use, the shard holds %d", connected, a)
	}
	maps := srv.shard0().maps.part.n
	if maps > srv.cfg.MaxEncryptionMappings {
		s.t.Fatalf("%d encryption mappings, bound %d", maps, srv.cfg.MaxEncryptionMappings)
	}
	tokens, size := s.tokenEntries()
	if tokens > size || size != soakTokenHistory {
		s.t.Fatalf("%d token history entries in a history of %d (configured %d)", tokens, size, soakTokenHistory)
	}
	s.maxConnected = max(s.maxConnected, connected)
	s.maxMaps = max(s.maxMaps, maps)
	s.maxTokens = max(s.maxTokens, tokens)
}

// echo is the server application: it checks and echoes every payload.
func (s *soak) echo(ev *Event) {
	if ev.Kind != EventPayload {
		return
	}
	id, num, err := parseFaultPayload(ev.Payload)
	if err != nil || id != ev.ClientID {
		s.t.Errorf("slot %d (client %d): payload %d of client %d, %v", ev.ClientIndex, ev.ClientID, num, id, err)
		return
	}
	// A client that left in the same Update has its disconnect event
	// after its payloads: the slot is no longer connected.
	if err := s.srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil && !errors.Is(err, ErrSlotNotConnected) {
		s.t.Errorf("echo to slot %d: %v", ev.ClientIndex, err)
	}
}

func (s *soak) tokenEntries() (n, size int) {
	a := s.srv.adm
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.history.pending.Load() + a.history.consumed.Load()), a.history.size()
}

// runSeat moves seat i through its life.
func (s *soak) runSeat(i int) {
	seat := &s.seats[i]
	switch seat.state {
	case soakIdle:
		if s.admitting && !s.now.Before(seat.at) {
			s.join(i)
		}
	case soakConnecting:
		seat.client.Update(s.now)
		switch st := seat.client.State(); {
		case st == Connected:
			s.c.connected++
			seat.state = soakPlaying
			seat.at = s.now.Add(time.Second + time.Duration(s.rng.Int64N(int64(5*time.Second))))
		case st.IsError() || st == Disconnected:
			s.c.failed++
			s.end(seat)
		case !s.admitting:
			s.c.vanishes++ // a drain: give up the handshake
			s.end(seat)
		}
	case soakPlaying:
		c := seat.client
		if c.State() != Connected {
			s.t.Errorf("client %d: %v while playing", seat.id, c.State())
			s.c.lost++
			s.end(seat)
			return
		}
		if s.now.Sub(seat.lastSend) >= soakSendInterval {
			seat.lastSend = s.now
			if err := c.SendPacket(faultPayload(s.pbuf, seat.id, seat.next)); err != nil {
				s.t.Errorf("client %d: %v", seat.id, err)
			}
			seat.next++
			s.c.sent++
		}
		c.Update(s.now)
		for n, _, ok := c.ReceivePacket(s.buf); ok; n, _, ok = c.ReceivePacket(s.buf) {
			id, num, err := parseFaultPayload(s.buf[:n])
			if err != nil || id != seat.id || num >= seat.next {
				s.t.Errorf("client %d: echo %d of client %d (sent %d), %v", seat.id, num, id, seat.next, err)
				continue
			}
			s.c.echoes++
		}
		if s.now.Before(seat.at) && s.admitting {
			return
		}
		if s.rng.IntN(2) == 0 {
			c.Disconnect(s.now)
			s.c.disconnects++
			seat.state = soakLeaving
			// Keep the socket long enough for the simulator to deliver
			// the disconnect packets (latency + jitter).
			seat.at = s.now.Add(200 * time.Millisecond)
			return
		}
		s.c.vanishes++
		s.end(seat)
	case soakLeaving:
		seat.client.Update(s.now) // lets the simulator send what is due
		if !s.now.Before(seat.at) {
			s.end(seat)
		}
	}
}

// join starts a new player in seat i: a new Client on a new address, with
// a fresh token and client id.
func (s *soak) join(i int) {
	seat := &s.seats[i]
	s.nextID++
	*seat = soakSeat{id: s.nextID}
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i + 1)}), 0)
	seat.conn = s.simConn(addr, s.rng.Uint64())
	var err error
	if seat.client, err = NewClient(ClientConfig{ReceiveQueueSize: 64}, seat.conn); err != nil {
		s.t.Fatal(err)
	}
	token, err := GenerateConnectToken(TokenParams{ProtocolID: 0x50a4, PrivateKey: testPrivateKey, ClientID: seat.id,
		PublicAddresses: []netip.AddrPort{s.public}, ExpireSeconds: 30, TimeoutSeconds: soakTimeoutSeconds, Now: s.now})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := seat.client.Connect(token, s.now); err != nil {
		s.t.Fatal(err)
	}
	seat.state = soakConnecting
	s.c.sessions++
	if s.leakBytes > 0 {
		soakLeak = append(soakLeak, make([]byte, s.leakBytes))
	}
}

// end closes the seat's socket (a player who vanishes just stops) and
// schedules the next player.
func (s *soak) end(seat *soakSeat) {
	seat.client.Close()
	seat.conn.Close()
	*seat = soakSeat{state: soakIdle, at: s.now.Add(time.Duration(s.rng.Int64N(int64(500 * time.Millisecond))))}
}

// empty reports whether every player has gone and the server holds
// nothing for any of them.
func (s *soak) empty() bool {
	for i := range s.seats {
		if s.seats[i].state != soakIdle {
			return false
		}
	}
	srv := s.srv
	sh := srv.shard0()
	return srv.NumConnectedClients() == 0 && sh.active.n == 0 && sh.byAddr.len() == 0 && sh.maps.part.n == 0
}

func (s *soak) residue() string {
	busy := 0
	for i := range s.seats {
		if s.seats[i].state != soakIdle {
			busy++
		}
	}
	srv := s.srv
	sh := srv.shard0()
	return fmt.Sprintf("%d seats busy, %d slots, %d in the shard, %d addresses, %d encryption mappings",
		busy, srv.NumConnectedClients(), sh.active.n, sh.byAddr.len(), sh.maps.part.n)
}

func (s *soak) sample(wallStart time.Time) soakSample {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	tokens, _ := s.tokenEntries()
	return soakSample{
		wall: time.Since(wallStart), fake: s.now.Sub(s.start), sessions: s.c.sessions,
		heapInuse: m.HeapInuse, heapAlloc: m.HeapAlloc, goroutines: runtime.NumGoroutine(),
		tokens: tokens,
	}
}
