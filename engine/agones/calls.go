package agones

import (
	"context"
	"fmt"
	"time"
)

// The stable SDK: paths, methods and bodies from agones
// sdks/swagger/sdk.swagger.json (proto/sdk/sdk.proto) and the REST guide
// site/content/en/docs/Guides/Client SDKs/rest.md. Every body-taking call
// sends a JSON object, "{}" for Empty: the sidecar answers a bodiless
// POST /health with 400 (cmd/sdk-server/main.go healthCheckWrapper).

// Ready marks the GameServer Ready to take players: POST /ready {}.
// Calling it on an Allocated GameServer moves it back to Ready.
func (s *SDK) Ready(ctx context.Context) error {
	return s.do(ctx, call{name: "Ready", method: "POST", path: "/ready", in: wireEmpty{}, idempotent: true})
}

// Health sends one health ping: POST /health {}. Agones marks the
// GameServer Unhealthy when pings stop for longer than its
// spec.health.periodSeconds (default 5s) failureThreshold times in a row.
func (s *SDK) Health(ctx context.Context) error {
	return s.do(ctx, call{name: "Health", method: "POST", path: "/health", in: wireEmpty{}, idempotent: true})
}

// Shutdown asks Agones to shut the GameServer down: POST /shutdown {}.
func (s *SDK) Shutdown(ctx context.Context) error {
	return s.do(ctx, call{name: "Shutdown", method: "POST", path: "/shutdown", in: wireEmpty{}, idempotent: true})
}

// Allocate marks the GameServer Allocated: POST /allocate {}.
func (s *SDK) Allocate(ctx context.Context) error {
	return s.do(ctx, call{name: "Allocate", method: "POST", path: "/allocate", in: wireEmpty{}, idempotent: true})
}

// Reserve marks the GameServer Reserved for d, rounded up to whole seconds:
// POST /reserve {"seconds":"N"}. d == 0 reserves with no time limit.
func (s *SDK) Reserve(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("agones: Reserve duration %v; want 0 (no limit) or more", d)
	}
	secs := int64((d + time.Second - 1) / time.Second)
	return s.do(ctx, call{name: "Reserve", method: "POST", path: "/reserve", in: wireDuration{Seconds: i64(secs)}, idempotent: true})
}

// GameServer returns the backing GameServer: GET /gameserver.
func (s *SDK) GameServer(ctx context.Context) (*GameServer, error) {
	var gs *GameServer
	if err := s.do(ctx, call{name: "GameServer", method: "GET", path: "/gameserver", out: &gs, idempotent: true}); err != nil {
		return nil, err
	}
	return gs, nil
}

// SetLabel sets the label MetadataPrefix+key on the GameServer:
// PUT /metadata/label {"key":..., "value":...}. See CheckLabel for what
// key and value may hold.
func (s *SDK) SetLabel(ctx context.Context, key, value string) error {
	if err := CheckLabel(key, value); err != nil {
		return err
	}
	return s.do(ctx, call{name: "SetLabel " + key, method: "PUT", path: "/metadata/label", in: wireKeyValue{key, value}, idempotent: true})
}

// SetAnnotation sets the annotation MetadataPrefix+key on the GameServer:
// PUT /metadata/annotation {"key":..., "value":...}. See CheckAnnotation.
func (s *SDK) SetAnnotation(ctx context.Context, key, value string) error {
	if err := CheckAnnotation(key, value); err != nil {
		return err
	}
	return s.do(ctx, call{name: "SetAnnotation " + key, method: "PUT", path: "/metadata/annotation", in: wireKeyValue{key, value}, idempotent: true})
}

// WaitGameServer is GameServer retried with backoff, whatever the failure,
// until it succeeds or ctx is done: for reading the public address before
// serving, when the sidecar may not be up yet.
func (s *SDK) WaitGameServer(ctx context.Context) (*GameServer, error) {
	one := s.withAttempts(1)
	var last error // the newest failure not caused by ctx ending
	for n := 1; ; n++ {
		gs, err := one.GameServer(ctx)
		if err == nil {
			return gs, nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if ctx.Err() != nil || !sleep(ctx, s.retry.delay(n), nil) {
			return nil, fmt.Errorf("agones: WaitGameServer: %w (last error: %v)", context.Cause(ctx), last)
		}
	}
}
