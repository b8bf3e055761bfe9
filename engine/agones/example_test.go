package agones_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/agones/agonestest"
)

// server stands in for the dedicated server: always live, one player.
type server struct{}

func (server) Live() bool                    { return true }
func (server) Players(dst []uint64) []uint64 { return append(dst, 42) }
func (server) Capacity() int                 { return 16 }

func Example() {
	sidecar, err := agonestest.New(agonestest.Config{
		Address:  "203.0.113.7",
		Ports:    []agonestest.Port{{Name: "game", Port: 7777}},
		Counters: map[string]agonestest.Counter{"players": {}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sidecar.Close()

	sdk, err := agones.NewSDK(agones.Config{Address: sidecar.Addr()})
	if err != nil {
		log.Fatal(err)
	}
	defer sdk.Close()
	ctx := context.Background()

	gs, err := sdk.GameServer(ctx)
	if err != nil {
		log.Fatal(err)
	}
	public, err := gs.PublicAddrPort("game")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tokens point at", public)

	life, err := agones.NewLifecycle(sdk, server{}, agones.LifecycleConfig{Tracking: agones.TrackCounter})
	if err != nil {
		log.Fatal(err)
	}
	defer life.Close()
	life.Start(ctx)
	<-life.Ready()
	fmt.Println("state", sidecar.State())

	// The player sync runs in the background; give it a moment.
	for range 1000 {
		if c, _ := sidecar.Counter("players"); c.Count == 1 {
			fmt.Printf("players %d/%d\n", c.Count, c.Capacity)
			break
		}
		time.Sleep(time.Millisecond)
	}

	// At the end of the drain:
	if err := life.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("state", sidecar.State())
	// Output:
	// tokens point at 203.0.113.7:7777
	// state Ready
	// players 1/16
	// state Shutdown
}
