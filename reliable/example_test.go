package reliable_test

import (
	"fmt"
	"time"

	"github.com/netcode-go/netcode/reliable"
)

// Two endpoints: a 3,000-byte packet crosses as three fragments, and the
// answer carries its ack.
func Example() {
	cfg := reliable.DefaultConfig()
	pool, _ := reliable.NewPool(cfg, 8, 4) // one per shard, shared
	client, _ := reliable.New(cfg, pool)
	server, _ := reliable.New(cfg, pool)
	client.Update(10 * time.Millisecond)
	server.Update(10 * time.Millisecond)

	buf := make([]byte, cfg.MaxDatagramBytes()) // the caller's datagram buffer
	p, _ := client.Send(make([]byte, 3000))
	for i := 0; i < p.Datagrams(); i++ {
		n, _ := p.WriteDatagram(i, buf) // then write buf[:n] to the network
		if d, _ := server.Receive(buf[:n]); d.Delivered {
			fmt.Printf("server got packet %d: %d bytes in %d fragments\n", d.Sequence, len(d.Payload), d.Fragments)
		}
	}

	server.Update(60 * time.Millisecond)
	client.Update(60 * time.Millisecond)
	answer, _ := server.Send([]byte("snapshot"))
	n, _ := answer.WriteDatagram(0, buf)
	client.Receive(buf[:n])
	fmt.Println("client acks:", client.Acks())
	client.ClearAcks()
	client.Update(70 * time.Millisecond)
	fmt.Printf("client rtt: %.0f ms\n", client.Stats().RTT)
	// Output:
	// server got packet 0: 3000 bytes in 3 fragments
	// client acks: [0]
	// client rtt: 50 ms
}
