package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// Socket faults and Close under traffic. The servers run on conns wrapped
// in batchiotest.FaultConn, which fails reads, fails writes part-way and cuts
// writes short on a seeded schedule; the tests check that the server
// counts what happened, keeps its clients, and carries traffic again once
// the faults stop; and that Close in the middle of traffic is prompt,
// orderly and leaves nothing running.

const faultPayloadLen = 40

// faultPayload fills buf with a payload that names its client and number
// and whose every other byte follows from both, so a torn, mixed-up or
// stale payload is detected.
func faultPayload(buf []byte, id, num uint64) []byte {
	p := buf[:faultPayloadLen]
	binary.LittleEndian.PutUint64(p, id)
	binary.LittleEndian.PutUint64(p[8:], num)
	for i := 16; i < len(p); i++ {
		p[i] = byte(id*131 + num*7 + uint64(i))
	}
	return p
}

// parseFaultPayload returns the client id and number of a payload made by
// faultPayload, or an error saying what is wrong with it.
func parseFaultPayload(p []byte) (id, num uint64, err error) {
	if len(p) != faultPayloadLen {
		return 0, 0, fmt.Errorf("payload of %d bytes, want %d", len(p), faultPayloadLen)
	}
	id, num = binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	for i := 16; i < len(p); i++ {
		if p[i] != byte(id*131+num*7+uint64(i)) {
			return id, num, fmt.Errorf("payload %d of client %d corrupted at byte %d: %x", num, id, i, p)
		}
	}
	return id, num, nil
}

// faultTraffic is the client side of a test: each client sends numbered
// payloads and checks the echoes: intact, its own, and in order without
// repeats (the server may lose some while faults are on).
type faultTraffic struct {
	t       *testing.T
	clients []*Client
	ids     []uint64
	next    []uint64 // number of each client's next payload
	last    []int64  // number of each client's last echo, -1 before the first
	echoes  []int    // echoes received per client
	buf     []byte
	pbuf    []byte
}

func newFaultTraffic(t *testing.T, clients []*Client, ids []uint64) *faultTraffic {
	f := &faultTraffic{t: t, clients: clients, ids: ids, next: make([]uint64, len(clients)),
		last: make([]int64, len(clients)), echoes: make([]int, len(clients)),
		buf: make([]byte, codec.MaxPayloadBytes), pbuf: make([]byte, faultPayloadLen)}
	for k := range f.last {
		f.last[k] = -1
	}
	return f
}

// send queues one payload from each connected client.
func (f *faultTraffic) send() {
	for k, c := range f.clients {
		if c.State() != Connected {
			continue
		}
		if err := c.SendPacket(faultPayload(f.pbuf, f.ids[k], f.next[k])); err != nil {
			f.t.Errorf("client %d: SendPacket: %v", f.ids[k], err)
			continue
		}
		f.next[k]++
	}
}

// update runs the clients at now and checks what they received.
func (f *faultTraffic) update(now time.Time) {
	for k, c := range f.clients {
		c.Update(now)
		for {
			n, _, ok := c.ReceivePacket(f.buf)
			if !ok {
				break
			}
			id, num, err := parseFaultPayload(f.buf[:n])
			switch {
			case err != nil:
				f.t.Errorf("client %d: echo: %v", f.ids[k], err)
			case id != f.ids[k]:
				f.t.Errorf("client %d got client %d's payload %d", f.ids[k], id, num)
			case int64(num) <= f.last[k] || num >= f.next[k]:
				f.t.Errorf("client %d: echo %d after %d (sent %d)", f.ids[k], num, f.last[k], f.next[k])
			default:
				f.last[k] = int64(num)
				f.echoes[k]++
			}
		}
	}
}

func (f *faultTraffic) totalEchoes() int {
	n := 0
	for _, e := range f.echoes {
		n += e
	}
	return n
}

// echoedSince reports whether every client has had an echo of every
// payload numbered from[k] to next[k]-1 (echoes come in order, so the last
// one's number and the count since from say it).
func (f *faultTraffic) allEchoed(from []uint64, since []int) bool {
	for k := range f.clients {
		if f.echoes[k]-since[k] != int(f.next[k]-from[k]) {
			return false
		}
	}
	return true
}

func (f *faultTraffic) allConnected() bool {
	for _, c := range f.clients {
		if c.State() != Connected {
			return false
		}
	}
	return true
}

// faultSchedule is the schedule of the fault tests: a fifth of the reads
// fail, a tenth of the writes fail part-way and a quarter are cut short.
func faultSchedule(seed uint64) batchiotest.FaultConfig {
	return batchiotest.FaultConfig{Seed: seed, ReadError: 0.2, WriteError: 0.1, ShortWrite: 0.25}
}

func sumFaults(fcs []*batchiotest.FaultConn) batchiotest.FaultStats {
	var s batchiotest.FaultStats
	for _, f := range fcs {
		x := f.Stats()
		s.ReadCalls += x.ReadCalls
		s.WriteCalls += x.WriteCalls
		s.ReadErrors += x.ReadErrors
		s.WriteErrors += x.WriteErrors
		s.ShortWrites += x.ShortWrites
		s.Failed += x.Failed
		s.Cut += x.Cut
	}
	return s
}

// TestFaultsShardedServer: a default-mode server of 2 shards on the memory
// network and a fake clock, whose conns fail reads and writes while 16
// clients connect and play. The shards survive and keep looping, every
// injected read error is counted, the lost sends are counted as send
// failures, no client times out, and once the faults stop every payload
// is echoed again.
func TestFaultsShardedServer(t *testing.T) {
	var fcs []*batchiotest.FaultConn
	n := newShardNet(t, memNet, ServerConfig{MaxClients: 64}, 2, func(c batchio.Conn) batchio.Conn {
		f, err := batchiotest.NewFaultConn(c, faultSchedule(uint64(len(fcs)+1)))
		if err != nil {
			t.Fatal(err)
		}
		fcs = append(fcs, f)
		return f
	})
	srv := n.srv
	const num = 16
	clients := n.newClients(num, 1, 256)
	ids := make([]uint64, num)
	for k := range ids {
		ids[k] = uint64(k + 1) // newClients' client ids
	}
	tr := newFaultTraffic(t, clients, ids)
	playing := false
	n.handle = func(ev *Event) {
		switch {
		case ev.Kind == EventConnect && !playing:
		case ev.Kind != EventPayload:
			t.Errorf("event %v for slot %d during play", ev.Kind, ev.ClientIndex)
		default:
			id, num, err := parseFaultPayload(ev.Payload)
			if err != nil || id != ev.ClientID {
				t.Errorf("slot %d (client %d): payload %d of client %d, %v", ev.ClientIndex, ev.ClientID, num, id, err)
				return
			}
			if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
				t.Errorf("echo to slot %d: %v", ev.ClientIndex, err)
			}
		}
	}
	// Handshakes under faults.
	if !n.run(20*time.Second, tr.update, func() bool { return tr.allConnected() && srv.NumConnectedClients() == num }) {
		t.Fatalf("under faults, %d of %d connected", srv.NumConnectedClients(), num)
	}
	playing = true
	sends := 0
	play := func(now time.Time) { // a payload from every client every 10 ms while sends says so
		if sends > 0 {
			sends--
			tr.send()
		}
		tr.update(now)
	}
	loops := func() []uint64 {
		var l []uint64
		for _, st := range srv.ShardStats(nil) {
			l = append(l, st.Loops)
		}
		return l
	}

	// Faults on: a second and a half of play.
	before := loops()
	sends = 150
	n.run(1500*time.Millisecond, play, func() bool { return false })
	during := sumFaults(fcs)
	after := loops()
	for i := range before {
		if after[i] <= before[i] {
			t.Fatalf("shard %d stopped looping under faults (%d loops, then %d)", i, before[i], after[i])
		}
	}
	if during.ReadErrors == 0 || during.WriteErrors == 0 || during.ShortWrites == 0 {
		t.Fatalf("the schedule injected nothing of some kind: %+v", during)
	}
	if !tr.allConnected() || srv.NumConnectedClients() != num {
		t.Fatalf("clients lost under faults: %d server-side", srv.NumConnectedClients())
	}
	echoesUnderFaults := tr.totalEchoes()
	sentUnderFaults := 0
	for _, x := range tr.next {
		sentUnderFaults += int(x)
	}

	// Faults off: 20 more payloads per client, every one echoed.
	for _, f := range fcs {
		f.SetEnabled(false)
	}
	n.run(200*time.Millisecond, play, func() bool { return false }) // echoes in flight land
	from := append([]uint64(nil), tr.next...)
	since := append([]int(nil), tr.echoes...)
	sends = 20
	if !n.run(10*time.Second, play, func() bool { return sends == 0 && tr.allEchoed(from, since) }) {
		for k := range clients {
			t.Logf("client %d: sent %d, echoed %d", ids[k], tr.next[k]-from[k], tr.echoes[k]-since[k])
		}
		t.Fatal("traffic did not recover when the faults stopped")
	}
	if !tr.allConnected() || srv.NumConnectedClients() != num {
		t.Fatalf("clients lost: %d server-side", srv.NumConnectedClients())
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	// The shards publish their counters when they stop: compare exactly.
	st := srv.Stats()
	faults := sumFaults(fcs)
	t.Logf("under faults: %d payloads sent, %d echoed; faults %+v; server read errors %d, send failures %d",
		sentUnderFaults, echoesUnderFaults, faults, st.ReadErrors, st.SendFailures)
	if st.ReadErrors != faults.ReadErrors {
		t.Fatalf("server counted %d read errors, %d were injected", st.ReadErrors, faults.ReadErrors)
	}
	if st.SendFailures < faults.Failed || faults.Failed == 0 {
		t.Fatalf("server counted %d send failures, failed writes withheld %d datagrams", st.SendFailures, faults.Failed)
	}
	if st.Timeouts != 0 {
		t.Fatalf("%d clients timed out", st.Timeouts)
	}
}

// TestListenClosesSocketsOnError: when Listen has opened its sockets and
// the server then cannot start (a bad config), the sockets are closed: the
// port can be bound again without SO_REUSEPORT. (A nil conn given to
// NewServer is a config error too: TestServerConfigValidation.)
func TestListenClosesSocketsOnError(t *testing.T) {
	probe := listenOrSkip(t, "127.0.0.1:0")
	addr := probe.LocalAddr()
	probe.Close()
	_, err := Listen(ServerConfig{ProtocolID: 1, PrivateKey: testPrivateKey[:31], Shards: 2}, batchio.Config{}, addr)
	if err == nil || !strings.Contains(err.Error(), "PrivateKey") {
		t.Fatalf("Listen with a short private key: %v", err)
	}
	again, err := batchio.Listen(addr, batchio.Config{})
	if err != nil {
		t.Fatalf("%v still bound after Listen failed: %v", addr, err)
	}
	again.Close()
}

// TestFaultsServer: the same for a manual-mode server on the memory
// network and a fake clock, so the schedule and its outcome repeat.
func TestFaultsServer(t *testing.T) {
	const n = 16
	now := time.Unix(1_800_000_000, 0).Add(-srvStartGrace) // the server starts before the tokens
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := network.Listen(netip.MustParseAddrPort("10.0.0.1:40000"))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := batchiotest.NewFaultConn(raw, faultSchedule(7))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{ProtocolID: 9, PrivateKey: testPrivateKey, MaxClients: 32, Manual: true,
		Clock: func() time.Time { return now }}, fc)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(srvStartGrace)
	clients := make([]*Client, n)
	ids := make([]uint64, n)
	for k := range clients {
		conn, err := network.Listen(netip.MustParseAddrPort(fmt.Sprintf("10.1.0.%d:5000", k+1)))
		if err != nil {
			t.Fatal(err)
		}
		if clients[k], err = NewClient(ClientConfig{}, conn); err != nil {
			t.Fatal(err)
		}
		ids[k] = uint64(1000 + k)
		// A 5 s timeout: faults that cut a client off that long fail the test.
		token, err := GenerateConnectToken(TokenParams{ProtocolID: 9, PrivateKey: testPrivateKey, ClientID: ids[k],
			PublicAddresses: []netip.AddrPort{raw.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := clients[k].Connect(token, now); err != nil {
			t.Fatal(err)
		}
	}
	tr := newFaultTraffic(t, clients, ids)
	echo := func(ev *Event) {
		if ev.Kind != EventPayload {
			return
		}
		id, num, err := parseFaultPayload(ev.Payload)
		if err != nil || id != ev.ClientID {
			t.Fatalf("slot %d (client %d): payload %d of client %d, %v", ev.ClientIndex, ev.ClientID, num, id, err)
		}
		if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
			t.Fatal(err)
		}
	}
	step := func() {
		now = now.Add(10 * time.Millisecond)
		tr.update(now)
		srv.Update(now)
		srv.Poll(echo)
	}
	for i := 0; i < 1000 && (!tr.allConnected() || srv.NumConnectedClients() < n); i++ {
		step()
	}
	if !tr.allConnected() || srv.NumConnectedClients() != n {
		t.Fatalf("under faults, %d of %d connected", srv.NumConnectedClients(), n)
	}
	for i := range 500 { // 5 s of play at 20 Hz
		if i%5 == 0 {
			tr.send()
		}
		step()
	}
	faults := fc.Stats()
	st := srv.Stats()
	t.Logf("faults %+v; server read errors %d, send failures %d; %d echoes", faults, st.ReadErrors, st.SendFailures, tr.totalEchoes())
	if faults.ReadErrors == 0 || faults.WriteErrors == 0 || faults.ShortWrites == 0 {
		t.Fatalf("the schedule injected nothing of some kind: %+v", faults)
	}
	if st.ReadErrors != faults.ReadErrors || st.SendFailures < faults.Failed {
		t.Fatalf("server counted %d read errors and %d send failures; injected %d read errors and %d failed datagrams",
			st.ReadErrors, st.SendFailures, faults.ReadErrors, faults.Failed)
	}
	if !tr.allConnected() || srv.NumConnectedClients() != n || st.Timeouts != 0 {
		t.Fatalf("clients lost under faults: %d server-side, %d timeouts", srv.NumConnectedClients(), st.Timeouts)
	}

	fc.SetEnabled(false)
	for range 10 {
		step()
	}
	from := append([]uint64(nil), tr.next...)
	since := append([]int(nil), tr.echoes...)
	for i := range 200 {
		if i%5 == 0 && i < 100 {
			tr.send()
		}
		step()
	}
	if !tr.allEchoed(from, since) {
		t.Fatalf("traffic did not recover: %d echoes of %d", tr.totalEchoes()-sumInts(since), 20*n)
	}
	if st2 := srv.Stats(); st2.ReadErrors != st.ReadErrors || st2.SendFailures != st.SendFailures {
		t.Fatalf("errors counted after the faults stopped: %+v", st2)
	}
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestCloseShardedUnderTraffic: Close of a default-mode server of 2
// shards from another goroutine while clients send and the application
// polls, echoes and broadcasts. Close returns; the shards tell their
// clients (disconnect packets); every payload the application got through
// Poll, before or after Close, was intact and in order; Poll afterwards
// reports a server-stopped disconnect for every client; sends after Close
// fail; the conns the server was given stay open; no goroutine is left.
// On UDP the shards park in the sockets, which Close wakes through the
// wrapper around them.
func TestCloseShardedUnderTraffic(t *testing.T) {
	for _, kind := range netKinds {
		t.Run(kind.String(), func(t *testing.T) { testCloseShardedUnderTraffic(t, kind) })
	}
}

func testCloseShardedUnderTraffic(t *testing.T, kind netKind) {
	base := runtime.NumGoroutine()
	var wrapped []*batchiotest.FaultConn // no faults: a wrapper without Wake of its own
	n := newShardNet(t, kind, ServerConfig{MaxClients: 64}, 2, func(c batchio.Conn) batchio.Conn {
		f, err := batchiotest.NewFaultConn(c, batchiotest.FaultConfig{})
		if err != nil {
			t.Fatal(err)
		}
		wrapped = append(wrapped, f)
		return f
	})
	srv := n.srv
	for i, sh := range srv.shards {
		// The wrapped conn's Wake is found through the wrapper (a socket has
		// one; a conn without parks its shard one timer scan at most).
		_, canWake := wrapped[i].Unwrap().(batchio.Waker)
		if sh.conn != batchio.Conn(wrapped[i]) || (sh.waker != nil) != canWake || (kind == udpNet && !canWake) {
			t.Fatalf("shard %d: conn %T, waker %v", i, sh.conn, sh.waker)
		}
	}
	const num = 16
	clients := n.newClients(num, 1, 256)
	ids := make([]uint64, num)
	slotID := map[int]uint64{}
	for k := range ids {
		ids[k] = uint64(k + 1)
	}
	n.handle = func(ev *Event) {
		if ev.Kind == EventConnect {
			slotID[ev.ClientIndex] = ev.ClientID
		}
	}
	update := func(now time.Time) {
		for _, c := range clients {
			c.Update(now)
		}
	}
	allConnected := func() bool {
		for _, c := range clients {
			if c.State() != Connected {
				return false
			}
		}
		return len(slotID) == num
	}
	if !n.run(10*time.Second, update, allConnected) {
		t.Fatalf("%d of %d clients connected", len(slotID), num)
	}

	// The application: everything it is handed is checked in the callback
	// and a copy kept; payloads are echoed and a broadcast goes out now and
	// then, racing with Close.
	var (
		kept        [][]byte
		lastNum     = map[uint64]int64{}
		disconnects = map[int]DisconnectReason{}
		sendErrs    = map[string]int{}
		flowing     = make(chan struct{}) // closed once the application has had 200 payloads
	)
	handle := func(ev *Event) {
		switch ev.Kind {
		case EventPayload:
			id, num, err := parseFaultPayload(ev.Payload)
			if err != nil || id != slotID[ev.ClientIndex] || id != ev.ClientID {
				t.Errorf("slot %d (client %d): payload %d of client %d, %v", ev.ClientIndex, slotID[ev.ClientIndex], num, id, err)
				return
			}
			if last, ok := lastNum[id]; ok && int64(num) <= last {
				t.Errorf("client %d: payload %d after %d", id, num, last)
			}
			lastNum[id] = int64(num)
			kept = append(kept, append([]byte(nil), ev.Payload...))
			if len(kept) == 200 {
				close(flowing)
			}
			if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
				sendErrs[err.Error()]++
			}
		case EventDisconnect:
			if _, dup := disconnects[ev.ClientIndex]; dup {
				t.Errorf("slot %d disconnected twice", ev.ClientIndex)
			}
			disconnects[ev.ClientIndex] = ev.Reason
		default:
			t.Errorf("unexpected %v event for slot %d", ev.Kind, ev.ClientIndex)
		}
	}
	var stopApp, stopClients atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the application's goroutine
		defer wg.Done()
		world := []byte("world state")
		for i := 0; !stopApp.Load(); i++ {
			srv.Poll(handle)
			if i%8 == 0 {
				_ = srv.Broadcast(world)
			}
			srv.Wait(time.Now().Add(2 * time.Millisecond))
		}
	}()
	disconnected := make(chan struct{})
	wg.Add(1)
	go func() { // the players, who wait for data between turns
		defer wg.Done()
		tr := newFaultTraffic(t, clients, ids)
		buf := make([]byte, codec.MaxPayloadBytes)
		closedSeen := false
		for !stopClients.Load() {
			now := n.now() // the fake clock stands still: nobody times out
			tr.send()
			for _, c := range clients {
				c.Update(now)
				for _, _, ok := c.ReceivePacket(buf); ok; _, _, ok = c.ReceivePacket(buf) {
				}
			}
			if !closedSeen {
				all := true
				for _, c := range clients {
					all = all && c.State() == Disconnected
				}
				if all {
					closedSeen = true
					close(disconnected)
				}
			}
			if err := clients[0].Wait(time.Now().Add(time.Millisecond)); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	select {
	case <-flowing:
	case <-time.After(10 * time.Second):
		t.Error("no traffic reached the application")
	}
	start := time.Now()
	err := srv.Close()
	took := time.Since(start)
	if err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-disconnected:
	case <-time.After(10 * time.Second):
		t.Error("clients were not all told of the shutdown")
	}
	stopApp.Store(true)
	stopClients.Store(true)
	wg.Wait()

	// This goroutine is the application now: what is left in the rings.
	srv.Poll(handle)
	if len(kept) == 0 {
		t.Fatal("no payload reached the application")
	}
	for _, p := range kept {
		if _, _, err := parseFaultPayload(p); err != nil {
			t.Fatalf("a kept payload changed after Close: %v", err)
		}
	}
	if len(disconnects) != num {
		t.Fatalf("%d disconnect events after Close, want %d", len(disconnects), num)
	}
	for i, r := range disconnects {
		if r != DisconnectServerStopped {
			t.Fatalf("slot %d: disconnect reason %v", i, r)
		}
	}
	if srv.NumConnectedClients() != 0 {
		t.Fatalf("%d clients connected after Close", srv.NumConnectedClients())
	}
	for i := range slotID {
		if err := srv.SendPacket(i, []byte("late")); !errors.Is(err, ErrServerStopped) {
			t.Fatalf("SendPacket after Close = %v", err)
		}
		if err := srv.DisconnectClient(i); !errors.Is(err, ErrServerStopped) {
			t.Fatalf("DisconnectClient after Close = %v", err)
		}
	}
	if err := srv.Broadcast([]byte("late")); !errors.Is(err, ErrServerStopped) {
		t.Fatalf("Broadcast after Close = %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	msgs := []batchio.Message{{Buf: make([]byte, 64)}}
	for i, f := range wrapped {
		if _, err := f.Unwrap().ReadBatch(msgs); err != nil {
			t.Fatalf("shard %d: the conn given to NewServer was closed: %v", i, err)
		}
	}
	t.Logf("Close took %v; %d payloads polled; echo errors %v", took, len(kept), sendErrs)
	waitGoroutines(t, base)
}

// TestCloseServerUnderTraffic: a manual-mode server (Listen, so it owns
// its socket) is closed by its own loop while clients send. Sends queued
// just before Close go out with the disconnect packets, the socket is
// closed, the server refuses work afterwards, Poll reports every client
// stopped, and the clients learn of the shutdown.
func TestCloseServerUnderTraffic(t *testing.T) {
	base := runtime.NumGoroutine()
	srv, err := Listen(ServerConfig{ProtocolID: 0x5348, PrivateKey: testPrivateKey, MaxClients: 32, Manual: true},
		batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.1: %v", err)
	}
	const n = 16
	var (
		stop     atomic.Bool
		took     time.Duration
		closeErr error
		polled   int
		kept     [][]byte
		done     = make(chan struct{})
	)
	go func() { // the server's owner loop
		defer close(done)
		connected := map[int]bool{}
		for {
			now := time.Now()
			srv.Update(now)
			srv.Poll(func(ev *Event) {
				switch ev.Kind {
				case EventConnect:
					connected[ev.ClientIndex] = true
				case EventDisconnect:
					delete(connected, ev.ClientIndex)
				case EventPayload:
					id, num, err := parseFaultPayload(ev.Payload)
					if err != nil || id != ev.ClientID {
						t.Errorf("slot %d (client %d): payload %d of client %d, %v", ev.ClientIndex, ev.ClientID, num, id, err)
						return
					}
					polled++
					kept = append(kept, append([]byte(nil), ev.Payload...))
					_ = srv.SendPacket(ev.ClientIndex, ev.Payload)
				}
			})
			if stop.Load() {
				// Queue a last message for everyone, then close.
				for i := range connected {
					if err := srv.SendPacket(i, []byte("bye")); err != nil {
						t.Errorf("last send to %d: %v", i, err)
					}
				}
				start := time.Now()
				closeErr = srv.Close()
				took = time.Since(start)
				return
			}
			srv.Wait(now.Add(2 * time.Millisecond))
		}
	}()

	clients := make([]*Client, n)
	ids := make([]uint64, n)
	for k := range clients {
		conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: -1, SendBuffer: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if clients[k], err = NewClient(ClientConfig{}, conn); err != nil {
			t.Fatal(err)
		}
		ids[k] = uint64(k + 1)
		token, err := GenerateConnectToken(TokenParams{ProtocolID: 0x5348, PrivateKey: testPrivateKey, ClientID: ids[k],
			PublicAddresses: srv.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := clients[k].Connect(token, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	tr := newFaultTraffic(t, clients, ids)
	buf := make([]byte, codec.MaxPayloadBytes)
	bye, echoes := 0, 0
	// run drives the clients in real time, waiting for data between turns.
	run := func(d time.Duration, until func() bool) {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) && !until() {
			now := time.Now()
			tr.send()
			for _, c := range clients {
				c.Update(now)
				for m, _, ok := c.ReceivePacket(buf); ok; m, _, ok = c.ReceivePacket(buf) {
					if string(buf[:m]) == "bye" {
						bye++
					} else {
						echoes++
					}
				}
			}
			if err := clients[0].Wait(now.Add(time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(10*time.Second, tr.allConnected)
	if !tr.allConnected() {
		t.Fatal("clients did not connect")
	}
	echoed := func() bool { return echoes >= 10*n }
	run(10*time.Second, echoed)
	if !echoed() {
		t.Fatalf("%d echoes in 10 s", echoes)
	}
	stop.Store(true)
	stopAt := time.Now()
	loopDone := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	run(10*time.Second, loopDone)
	if !loopDone() {
		t.Fatal("the server loop did not stop")
	}
	exited := time.Since(stopAt)
	allDisconnected := func() bool {
		for _, c := range clients {
			if c.State() != Disconnected {
				return false
			}
		}
		return true
	}
	run(10*time.Second, allDisconnected)

	if closeErr != nil {
		t.Fatalf("Close = %v", closeErr)
	}
	if polled == 0 {
		t.Fatal("no payload reached the server")
	}
	for _, p := range kept {
		if _, _, err := parseFaultPayload(p); err != nil {
			t.Fatalf("a kept payload changed after Close: %v", err)
		}
	}
	if !allDisconnected() {
		t.Fatal("clients were not told of the shutdown")
	}
	if bye == 0 {
		t.Fatal("no send queued before Close reached a client")
	}
	// This goroutine is the application now: the disconnect events free
	// the slots.
	stopped := 0
	srv.Poll(func(ev *Event) {
		if ev.Kind == EventDisconnect && ev.Reason == DisconnectServerStopped {
			stopped++
		}
	})
	if stopped != n || srv.NumConnectedClients() != 0 {
		t.Fatalf("%d server-stopped disconnect events, %d clients connected after Close", stopped, srv.NumConnectedClients())
	}
	if err := srv.SendPacket(0, []byte("late")); !errors.Is(err, ErrServerStopped) {
		t.Fatalf("SendPacket after Close = %v", err)
	}
	if err := srv.Update(time.Now()); err != nil { // does nothing, does not crash
		t.Fatalf("Update after Close = %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := srv.shard0().conn.ReadBatch([]batchio.Message{{Buf: make([]byte, 64)}}); !errors.Is(err, batchio.ErrClosed) {
		t.Fatalf("server socket not closed: %v", err)
	}
	t.Logf("loop exited %v after the stop, Close took %v; %d payloads received, %d of %d last sends arrived", exited, took, polled, bye, n)
	waitGoroutines(t, base)
}

// TestFlushDoesNotResendDroppedDatagrams: when WriteBatch drops a datagram
// in the middle of a batch, the server neither resends the rest (which would
// duplicate them) nor loses count of the failure.
func TestFlushDoesNotResendDroppedDatagrams(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.7:1000", 3, nil)
	i := p.connect()
	p.send(p.keepAlive()) // confirm the slot: no keep-alive before each payload
	p.received()
	conn := h.conns[0]
	conn.Sent()
	written := conn.Stats().Written
	// The second datagram of every batch is dropped, as a socket drops
	// one after a hard error on it.
	conn.DropWrite = func(i int) bool { return i == 1 }
	for k := range 5 {
		if err := h.s.SendPacket(i, []byte{byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	before := h.s.Stats().SendFailures
	h.s.Flush()
	h.update() // publishes the counters (Stats is as of the last pass)
	seen := map[string]int{}
	for _, d := range conn.Sent() {
		seen[string(d.Data)]++
	}
	for d, n := range seen {
		if n != 1 {
			t.Fatalf("datagram %x sent %d times", d, n)
		}
	}
	st := conn.Stats()
	if offered := st.Written - written + st.Dropped; offered != 5 || st.Dropped != 1 || h.s.Stats().SendFailures-before != 1 {
		t.Fatalf("offered %d datagrams, %d dropped, %d failures counted; want 5, 1 and 1", offered, st.Dropped, h.s.Stats().SendFailures-before)
	}
}
