// Package dedicated runs a netcode dedicated server the way operators run
// one: Run listens, serves a Game, exposes /metrics, /healthz and /readyz
// over HTTP, optionally takes part in the Agones GameServer lifecycle, and
// drains gracefully when its context ends. cmd/netcode-server is a thin
// main around it; a game plugs in its own logic through the Game
// interface. With Config.WebTransport the same server also serves
// browsers: a WebTransport listener (package batchio/webtransport) is one
// more shard, so the token rules, limits, metrics and the drain below
// cover browser players as UDP ones.
//
// The drain, when ctx is done (SIGTERM in the command):
//
//  1. the server stops admitting at once (new requests are answered as a
//     full server answers them) and /readyz answers 503;
//  2. connected players play on until all have left or DrainGrace has
//     passed; then the rest are disconnected with the redundant
//     disconnect packets and the sockets closed;
//  3. with Agones, the sidecar is asked to Shutdown the GameServer
//     (bounded by AgonesConfig.ShutdownTimeout);
//  4. the HTTP server is closed.
//
// Run returns when all of its goroutines have exited, at most DrainGrace +
// GameStall + ShutdownTimeout + HTTPShutdownTimeout after ctx is done.
//
// The game's callbacks run on one goroutine, the application goroutine of
// engine.Server, with the server's per-event and send calls; they must
// not block. A watchdog times each call: one that lasts Config.GameStall
// makes the game hung, and the server not live (/healthz 503, netcode_live
// 0, the Agones Health pings stop) until it returns, so that the
// orchestrator replaces the process. A game still hung when the drain
// ends is not waited for: Run returns ErrGameHung within the same bound,
// leaving that one goroutine in its call for the process's exit to end.
package dedicated
