//go:build linux

package engine

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// echoLoad is a light load generator: one raw socket that keeps a window of
// datagrams in flight to a server and counts what comes back. For the
// protocol echo it seals netcode payload packets with a session key taken
// from the token it minted; it does not decrypt the echoes (nor does it for
// the bare echo), so both measurements load the server the same way.
type echoLoad struct {
	conn  batchio.Conn
	to    netip.AddrPort
	key   *aead.PacketKey // nil: bare datagrams
	seq   uint64
	out   []batchio.Message
	in    []batchio.Message
	size  int
	limit int
}

func newEchoLoad(b *testing.B, conn batchio.Conn, to netip.AddrPort, key *aead.PacketKey, seq uint64, size int) *echoLoad {
	l := &echoLoad{conn: conn, to: to, key: key, seq: seq, size: size, limit: 256}
	l.out = make([]batchio.Message, 32)
	for i := range l.out {
		l.out[i] = batchio.Message{Buf: make([]byte, codec.MaxPacketBytes), Addr: to}
	}
	l.in = make([]batchio.Message, 64)
	for i := range l.in {
		l.in[i].Buf = make([]byte, codec.MaxPacketBytes)
	}
	return l
}

// run sends until n echoes came back and returns the elapsed time.
func (l *echoLoad) run(b *testing.B, n int) time.Duration {
	payload := make([]byte, l.size)
	inFlight, received := 0, 0
	start := time.Now()
	lastProgress := start
	for received < n {
		for inFlight+len(l.out) <= l.limit {
			for i := range l.out {
				m := &l.out[i]
				if l.key == nil {
					m.N = l.size
				} else {
					var err error
					if m.N, err = codec.WritePayloadPacket(m.Buf, l.seq, payload, l.key); err != nil {
						b.Fatal(err)
					}
					l.seq++
				}
			}
			sent, err := l.conn.WriteBatch(l.out)
			if err != nil {
				b.Fatal(err)
			}
			inFlight += sent
		}
		k, err := l.conn.ReadBatch(l.in)
		if err != nil {
			b.Fatal(err)
		}
		if k > 0 {
			received += k
			inFlight -= k
			lastProgress = time.Now()
			continue
		}
		if err := l.conn.WaitRead(time.Now().Add(5 * time.Millisecond)); err != nil {
			b.Fatal(err)
		}
		if time.Since(lastProgress) > 50*time.Millisecond {
			inFlight = 0 // lost to a full socket buffer: refill the window
		}
	}
	return time.Since(start)
}

// echoSockets are the server sockets BenchmarkEcho compares: waiting on
// the netpoller (mmsg) or in poll(2) (block), and sending with UDP GSO.
// (The comparison-only receive modes, xnet and single, belong to package
// bench, which engine's tests cannot import.)
var echoSockets = []struct {
	name string
	cfg  batchio.Config
}{
	{"mmsg", batchio.Config{DisableGSO: true}},
	{"block", batchio.Config{BlockingWait: true, DisableGSO: true}},
	{"mmsg-gso", batchio.Config{}},
}

// BenchmarkEcho compares, in one run, the full protocol echo (recvmmsg,
// decrypt, replay check, event ring, application echo, encrypt, sendmmsg)
// of a manual-mode server for each server socket (server-*) and of a
// default-mode one of one shard (default-*), against a bare echo loop
// without protocol or crypto (the ceiling) and a crypto-only loop
// (recvmmsg, open, seal, sendmmsg: what is left when the engine's own work
// is taken away), over real loopback sockets:
//
//	go test -run '^$' -bench Echo -benchtime 300000x ./engine
//
// The -read100ms variant has a goroutine read the server's stats, liveness
// and readiness every 100 ms, as a metrics scrape and health probes do
// (engine/dedicated's BenchmarkEcho measures real HTTP scrapes).
//
// The -gso variants send with UDP GSO. The load is one client, so every
// flush is a run of equal datagrams to one address, GSO's best case; a
// game server's flush holds one or two datagrams per client.
func BenchmarkEcho(b *testing.B) {
	for _, size := range []int{64, 1200} {
		b.Run(fmt.Sprintf("bare/%d", size), func(b *testing.B) { benchBareEcho(b, batchio.Config{}, size) })
		b.Run(fmt.Sprintf("crypto/%d", size), func(b *testing.B) { benchCryptoEcho(b, size) })
		for _, sock := range echoSockets {
			if sock.name == "mmsg-gso" {
				b.Run(fmt.Sprintf("bare-gso/%d", size), func(b *testing.B) { benchBareEcho(b, sock.cfg, size) })
			}
			b.Run(fmt.Sprintf("server-%s/%d", sock.name, size), func(b *testing.B) { benchServerEcho(b, sock.cfg, true, size, 0) })
			if sock.name == "mmsg" || sock.name == "mmsg-gso" {
				b.Run(fmt.Sprintf("default-%s/%d", sock.name, size), func(b *testing.B) { benchServerEcho(b, sock.cfg, false, size, 0) })
			}
			if sock.name == "mmsg" {
				b.Run(fmt.Sprintf("default-%s-read100ms/%d", sock.name, size), func(b *testing.B) {
					benchServerEcho(b, sock.cfg, false, size, 100*time.Millisecond)
				})
			}
		}
	}
}

func listenMmsg(b *testing.B, cfg batchio.Config) batchio.Conn {
	c, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func report(b *testing.B, n int, elapsed time.Duration) {
	b.ReportMetric(float64(n)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/packet")
}

func benchBareEcho(b *testing.B, cfg batchio.Config, size int) {
	benchEchoLoop(b, listenMmsg(b, cfg), nil, size, func(in []batchio.Message) []batchio.Message { return in })
}

// benchCryptoEcho echoes payload packets with nothing but the codec and
// the two session keys: the floor under any netcode server's per-packet
// cost, to set the engine's own overhead apart from the crypto's.
func benchCryptoEcho(b *testing.B, size int) {
	var c2s, s2c [32]byte
	c2s[0], s2c[0] = 1, 2
	newKey := func(k []byte) *aead.PacketKey {
		key, err := aead.NewPacketKey(k, 0xbe)
		if err != nil {
			b.Fatal(err)
		}
		return key
	}
	recvKey, sendKey, loadKey := newKey(c2s[:]), newKey(s2c[:]), newKey(c2s[:])
	out := make([]batchio.Message, 64)
	for i := range out {
		out[i].Buf = make([]byte, codec.MaxPacketBytes)
	}
	rp := codec.ReadParams{Role: codec.RoleServer, ProtocolID: 0xbe, Key: recvKey}
	var pkt codec.Packet
	var seq uint64
	benchEchoLoop(b, listenMmsg(b, batchio.Config{}), loadKey, size, func(in []batchio.Message) []batchio.Message {
		k := 0
		for i := range in {
			if codec.ReadPacket(in[i].Buf[:in[i].N], &rp, &pkt) != nil || pkt.Type != codec.ConnectionPayload {
				continue
			}
			m := &out[k]
			var err error
			if m.N, err = codec.WritePayloadPacket(m.Buf, seq, pkt.Payload, sendKey); err != nil {
				continue
			}
			seq++
			m.Addr = in[i].Addr
			k++
		}
		return out[:k]
	})
}

// benchEchoLoop runs a server goroutine on srv that reads batches and
// sends back what reply makes of each, under the echo load (sealing with
// loadKey, or bare datagrams if nil), and reports the load's packets/s.
func benchEchoLoop(b *testing.B, srv batchio.Conn, loadKey *aead.PacketKey, size int, reply func([]batchio.Message) []batchio.Message) {
	cli := listenMmsg(b, loadSocket)
	defer cli.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		msgs := make([]batchio.Message, 64)
		for i := range msgs {
			msgs[i].Buf = make([]byte, codec.MaxPacketBytes)
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := srv.ReadBatch(msgs)
			if err != nil {
				return
			}
			if n == 0 {
				if srv.WaitRead(time.Now().Add(10*time.Millisecond)) != nil {
					return
				}
				continue
			}
			srv.WriteBatch(reply(msgs[:n]))
		}
	}()
	load := newEchoLoad(b, cli, srv.LocalAddr(), loadKey, 0, size)
	b.ReportAllocs()
	b.ResetTimer()
	elapsed := load.run(b, b.N)
	b.StopTimer()
	report(b, b.N, elapsed)
	close(stop)
	srv.Close()
	wg.Wait()
}

// benchServerEcho echoes through a server on a socket of sock, in manual
// mode (a goroutine driving Update, Poll and Flush) or in the default mode
// (the shard's goroutine, and the application's polling and echoing).
// With readEvery > 0 a goroutine reads the server's stats that often.
func benchServerEcho(b *testing.B, sock batchio.Config, manual bool, size int, readEvery time.Duration) {
	sconn := listenMmsg(b, sock)
	defer sconn.Close()
	cconn := listenMmsg(b, loadSocket)
	defer cconn.Close()
	srv, err := NewServer(ServerConfig{ProtocolID: 0xbe, PrivateKey: testPrivateKey, MaxClients: 4, Manual: manual}, sconn)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	token, err := GenerateConnectToken(TokenParams{ProtocolID: 0xbe, PrivateKey: testPrivateKey, ClientID: 1,
		PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 60})
	if err != nil {
		b.Fatal(err)
	}
	var ct codec.ConnectToken
	if err := codec.ReadConnectToken(token, &ct); err != nil {
		b.Fatal(err)
	}
	// Handshake with a real client on the load's socket.
	client, err := NewClient(ClientConfig{}, cconn)
	if err != nil {
		b.Fatal(err)
	}
	if err := client.Connect(token, time.Now()); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); client.State() != Connected && time.Now().Before(deadline); {
		now := time.Now()
		client.Update(now)
		if manual {
			srv.Update(now)
		}
		srv.Poll(func(*Event) {})
		client.Wait(now.Add(time.Millisecond))
	}
	if client.State() != Connected {
		b.Fatalf("client %v", client.State())
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the application, echoing
		defer wg.Done()
		if manual && sock.BlockingWait {
			runtime.LockOSThread() // Wait blocks in poll(2) on this thread
			defer runtime.UnlockOSThread()
		}
		echo := func(ev *Event) {
			if ev.Kind == EventPayload {
				_ = srv.SendPacket(ev.ClientIndex, ev.Payload)
			}
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			now := time.Now()
			if manual {
				srv.Update(now)
			}
			n := srv.Poll(echo)
			srv.Flush()
			if n == 0 {
				srv.Wait(now.Add(10 * time.Millisecond))
			}
		}
	}()
	if readEvery > 0 {
		wg.Go(func() {
			tick := time.NewTicker(readEvery)
			defer tick.Stop()
			buf := srv.ShardStats(nil)
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				buf = srv.ShardStats(buf[:0])
				_, _, _, _ = srv.Stats(), srv.Live(time.Second), srv.Ready(), srv.Draining()
			}
		})
	}
	key, err := aead.NewPacketKey(ct.ClientToServerKey[:], 0xbe)
	if err != nil {
		b.Fatal(err)
	}
	load := newEchoLoad(b, cconn, sconn.LocalAddr(), key, 1<<20, size)
	b.ReportAllocs()
	b.ResetTimer()
	elapsed := load.run(b, b.N)
	b.StopTimer()
	report(b, b.N, elapsed)
	close(stop)
	wg.Wait()
	if d := srv.Stats().Dropped(); d > 0 {
		b.Logf("server dropped %d: codec %v engine %v", d, srv.Stats().CodecDrops, srv.Stats().Drops)
	}
}

// loadSocket is the load's socket. It sends its bursts to the one server
// address with GSO, so the load can offer more than a server core takes.
var loadSocket = batchio.Config{}
