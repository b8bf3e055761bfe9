// Package agones runs a netcode dedicated server's side of the Agones
// GameServer lifecycle, through the SDK sidecar's REST gateway, with the
// standard library only. Nothing in the engine depends on it; a server
// command uses it when configured to.
//
// SDK is a client of the gateway: every SDK call (stable, beta Counters and
// Lists, alpha player tracking), bounded by timeouts and retried with
// backoff while the sidecar is not up yet, as the Agones REST guide asks
// (a few attempts per call; WaitGameServer and the Lifecycle keep trying
// until their context ends).
// Lifecycle drives it for a Server: Ready once listening, Health while
// every shard makes progress, the player count and capacity kept in step,
// and Shutdown at the end of a drain. A failing or hanging sidecar is
// logged and counted, and never blocks or crashes the server.
//
// Typical use in a server command:
//
//	sdk, err := agones.NewSDK(agones.Config{}) // localhost:$AGONES_SDK_HTTP_PORT
//	if err != nil { ... }
//	defer sdk.Close()
//	gs, err := sdk.WaitGameServer(ctx) // retried until the sidecar answers
//	if err != nil { ... }
//	public, err := gs.PublicAddrPort("default") // for the connect tokens
//	...
//	life, err := agones.NewLifecycle(sdk, server, agones.LifecycleConfig{
//		Tracking: agones.TrackCounter, // "players": count and capacity
//		Logger:   logger,
//	})
//	if err != nil { ... }
//	life.Start(ctx) // once listening
//	defer life.Close()
//	...
//	// drain, then:
//	err = life.Shutdown(shutdownCtx)
//
// The fake sidecar in package agonestest checks every request against the
// documented API, for tests.
package agones
