package dedicated

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
)

// agonesServer is the server as the Agones lifecycle sees it.
type agonesServer struct {
	srv     *engine.Server
	stall   time.Duration
	players *players
	watch   *watchdog
}

var _ agones.Server = agonesServer{}

func (a agonesServer) Live() bool                    { return a.watch.live() && a.srv.Live(a.stall) }
func (a agonesServer) Players(dst []uint64) []uint64 { return a.players.ids(dst) }
func (a agonesServer) Capacity() int                 { return a.srv.MaxClients() }

// publicFromAgones waits, within the configured bound, for the sidecar's
// GameServer status and returns the address its players reach.
func publicFromAgones(ctx context.Context, sdk *agones.SDK, cfg *AgonesConfig, log *slog.Logger) (netip.AddrPort, error) {
	log.Info("agones: waiting for the GameServer status for the public address", slog.String("timeout", cfg.AddressTimeout.String()))
	wctx, cancel := context.WithTimeout(ctx, cfg.AddressTimeout)
	defer cancel()
	gs, err := sdk.WaitGameServer(wctx)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("dedicated: no public address given and none from Agones: %w", err)
	}
	pub, err := gs.PublicAddrPort(cfg.PortName)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("dedicated: public address from Agones: %w", err)
	}
	log.Info("agones: public address from the GameServer status", slog.String("public", pub.String()),
		slog.String("gameserver", gs.ObjectMeta.Name), slog.String("state", gs.Status.State))
	return pub, nil
}

// agonesRun is the Agones side of one Run.
type agonesRun struct {
	cfg  *AgonesConfig
	sdk  *agones.SDK
	life *agones.Lifecycle
	log  *slog.Logger
}

// start begins the lifecycle: Ready (retried until the sidecar answers),
// then Health and player syncs. Failures are logged, never returned to
// the server.
func (a *agonesRun) start(srv *engine.Server, stall time.Duration, p *players, w *watchdog) error {
	life, err := agones.NewLifecycle(a.sdk, agonesServer{srv, stall, p, w}, a.cfg.Lifecycle)
	if err != nil {
		return fmt.Errorf("dedicated: %w", err)
	}
	a.life = life
	// The lifecycle stops at Shutdown or Close, not with Run's ctx: the
	// Health pings go on while the drain runs.
	return life.Start(context.Background())
}

// shutdown asks the sidecar to shut the GameServer down, within the
// configured bound, and stops the lifecycle.
func (a *agonesRun) shutdown() {
	if a.life == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := a.life.Shutdown(ctx); err != nil {
		a.log.Warn("agones: Shutdown not accepted; the GameServer is left to Agones", slog.Any("err", err))
	}
	a.life.Close()
	st := a.life.Stats()
	a.log.Info("agones: lifecycle ended", slog.Bool("ready", st.Ready), slog.Bool("shutdown", st.Shutdown),
		slog.Uint64("calls", st.Calls), slog.Uint64("failures", st.Failures), slog.Uint64("health_sent", st.HealthSent))
}

func (a *agonesRun) close() {
	if a.life != nil {
		a.life.Close()
	}
	a.sdk.Close()
}
