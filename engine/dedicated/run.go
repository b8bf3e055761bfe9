package dedicated

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/metrics"
)

// ErrGameHung is in Run's error when the game was hung at the end of the
// drain: a call into it had lasted Config.GameStall. Its goroutine is
// still in that call; the process should exit (the command exits 1).
var ErrGameHung = errors.New("dedicated: the game is hung: a call into it did not return within Config.GameStall")

// loopPoll is how often the drain asks the watchdog while it waits for
// the game's goroutine to end.
const loopPoll = 10 * time.Millisecond

// Run serves game on a server configured by cfg until ctx is done, then
// drains (see the package documentation) and returns once everything it
// started has exited. The error is nil after a drain that ran its course;
// it says what failed when the server could not start or the HTTP server
// failed (which also drains the server).
func Run(ctx context.Context, cfg Config, game Game) (err error) {
	if game == nil {
		return errors.New("dedicated: Run needs a Game (Echo, Relay or your own)")
	}
	if err := cfg.check(); err != nil {
		return err
	}
	log := cfg.Logger
	var ag *agonesRun
	var pl *players
	if cfg.Agones != nil {
		sdk, err := agones.NewSDK(cfg.Agones.SDK)
		if err != nil {
			return fmt.Errorf("dedicated: %w", err)
		}
		ag = &agonesRun{cfg: cfg.Agones, sdk: sdk, log: log}
		defer ag.close()
		pl = new(players)
		if len(cfg.Server.PublicAddresses) == 0 {
			pub, err := publicFromAgones(ctx, sdk, cfg.Agones, log)
			if err != nil {
				return err
			}
			cfg.Server.PublicAddresses = []netip.AddrPort{pub}
		}
	}

	wt, err := listenWebTransport(&cfg, log)
	if err != nil {
		return err
	}
	var more []batchio.Conn
	if wt != nil {
		defer wt.Close() // after the server's drain and close
		more = append(more, wt)
	}
	srv, err := engine.ListenWith(cfg.Server, cfg.Socket, cfg.Bind, more...)
	if err != nil {
		return fmt.Errorf("dedicated: %w", err)
	}
	defer srv.Close() // on the early returns; the drain closes it otherwise
	reg := cfg.Registry
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if wt != nil {
		wc := newWebTransportCollector(wt)
		if err := reg.Register(wc); err != nil {
			return fmt.Errorf("dedicated: registering the WebTransport metrics: %w", err)
		}
		defer reg.Unregister(wc)
	}
	watch := newWatchdog(cfg.GameStall, log)
	col := metrics.NewCollector(srv, metrics.LiveStall(cfg.LiveStall), metrics.LiveAlso(watch.live))
	if err := reg.Register(col); err != nil {
		return fmt.Errorf("dedicated: registering the server's metrics: %w", err)
	}
	defer reg.Unregister(col)
	tick, err := metrics.NewTickHistogram(reg)
	if err != nil {
		return fmt.Errorf("dedicated: %w", err)
	}
	defer reg.Unregister(tick)
	var w *web
	if cfg.HTTPAddr != "" {
		if w, err = listenHTTP(cfg.HTTPAddr, handler(srv, reg, cfg.LiveStall, watch, log), log); err != nil {
			return err
		}
	}

	log.Info("netcode dedicated server serving",
		slog.Any("udp", uniqueAddrs(srv.LocalAddrs())), slog.Any("public", srv.PublicAddresses()),
		slog.String("http", addrString(w.addr())), slog.Int("max_clients", srv.MaxClients()),
		slog.Float64("tick_hz", cfg.TickRate), slog.String("drain_grace", cfg.DrainGrace.String()),
		slog.Bool("agones", ag != nil))
	if cfg.Serving != nil {
		cfg.Serving(srv, w.addr())
	}
	l := newLoop(srv, game, cfg.TickRate, tick, pl, watch)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		l.run()
	}()
	if ag != nil {
		if err := ag.start(srv, cfg.LiveStall, pl, watch); err != nil {
			log.Error("agones: lifecycle not started; serving without it", slog.Any("err", err))
		}
	}

	select {
	case <-ctx.Done():
		log.Info("netcode dedicated server: drain requested", slog.Any("cause", context.Cause(ctx)))
	case err = <-w.failed():
		err = fmt.Errorf("dedicated: HTTP server failed: %w", err)
		log.Error("netcode dedicated server: HTTP server failed; draining", slog.Any("err", err))
		w = nil // already returned
	}
	drain(srv, cfg.DrainGrace, log)
	l.stop.Store(true)
	if !watch.waitLoop(loopDone, loopPoll) {
		// The game's goroutine is left in its call: nothing can end it
		// but the process's exit, which the error asks for.
		err = errors.Join(err, fmt.Errorf("%w (in one call for %v)", ErrGameHung, watch.stuck().Round(time.Millisecond)))
		log.Error("netcode dedicated server: the game is hung; not waiting for it", slog.Duration("bound", cfg.GameStall))
	}
	if ag != nil {
		ag.shutdown()
	}
	if herr := w.close(); herr != nil && err == nil {
		err = fmt.Errorf("dedicated: HTTP server: %w", herr)
	}
	st := srv.Stats()
	log.Info("netcode dedicated server stopped", slog.Uint64("connects", st.Connects),
		slog.Uint64("packets_in", st.PacketsIn), slog.Uint64("packets_out", st.PacketsOut))
	return err
}

// drain stops admitting at once (readiness false), lets the players play
// on for up to grace or until they have all left, then closes the server,
// which disconnects whoever is left with redundant disconnect packets.
func drain(srv *engine.Server, grace time.Duration, log *slog.Logger) {
	srv.Drain()
	start := time.Now()
	log.Info("netcode dedicated server draining", slog.Int("connected", srv.NumConnectedClients()), slog.String("grace", grace.String()))
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	left := srv.NumConnectedClients()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("netcode dedicated server: closing the sockets", slog.Any("err", err))
	}
	log.Info("netcode dedicated server drained", slog.String("took", time.Since(start).Round(time.Millisecond).String()),
		slog.Bool("grace_expired", ctx.Err() != nil), slog.Int("connected_at_start", left))
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
