// Package health serves a netcode server's liveness and readiness as plain
// http.Handlers, for an orchestrator's probes (Kubernetes, a load balancer,
// the token service's HealthDirectory), with the standard library only.
//
// Liveness answers 200 while every shard makes progress and 503 once one
// has stalled (restart me), and LivenessAnd adds the application's own
// check (the dedicated runner's watchdog over the game); Readiness answers 200 while the server listens
// and admits clients and 503 while it drains or after it stopped (send no
// new players here), followed by the server's connected and maximum
// clients, for the token service's directory. Both answer GET and HEAD
// with a short text body and Cache-Control: no-store, and read only
// atomics and the admission count of the server: a probe never makes a
// shard wait.
//
//	mux.Handle("/healthz", health.Liveness(srv, health.DefaultStall))
//	mux.Handle("/readyz", health.Readiness(srv))
package health
