package agones

import (
	"context"
	"fmt"
	"net/url"
)

// Player tracking (alpha, feature gate PlayerTracking): paths, methods and
// bodies from agones sdks/swagger/alpha.swagger.json
// (proto/sdk/alpha/alpha.proto) and the REST guide's "Player Tracking".
// The sidecar refuses all of them when the gate is off.

// PlayerConnect records a connected player and reports whether it was new:
// POST /alpha/player/connect {"playerID":...}. The sidecar refuses a new
// player once the capacity is reached.
func (s *SDK) PlayerConnect(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, fmt.Errorf("agones: PlayerConnect: empty player id")
	}
	return s.boolCall(ctx, call{name: "PlayerConnect", method: "POST", path: "/alpha/player/connect", in: wirePlayerID{id}})
}

// PlayerDisconnect records a player leaving and reports whether it was
// connected: POST /alpha/player/disconnect {"playerID":...}.
func (s *SDK) PlayerDisconnect(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, fmt.Errorf("agones: PlayerDisconnect: empty player id")
	}
	return s.boolCall(ctx, call{name: "PlayerDisconnect", method: "POST", path: "/alpha/player/disconnect", in: wirePlayerID{id}})
}

// SetPlayerCapacity sets the player capacity:
// PUT /alpha/player/capacity {"count":"N"}.
func (s *SDK) SetPlayerCapacity(ctx context.Context, n int64) error {
	if n < 0 {
		return fmt.Errorf("agones: SetPlayerCapacity %d; want 0 or more", n)
	}
	return s.do(ctx, call{name: "SetPlayerCapacity", method: "PUT", path: "/alpha/player/capacity", in: wireCount{i64(n)}, idempotent: true})
}

// GetPlayerCapacity returns the player capacity: GET /alpha/player/capacity.
func (s *SDK) GetPlayerCapacity(ctx context.Context) (int64, error) {
	return s.countCall(ctx, call{name: "GetPlayerCapacity", method: "GET", path: "/alpha/player/capacity", idempotent: true})
}

// GetPlayerCount returns the number of connected players:
// GET /alpha/player/count.
func (s *SDK) GetPlayerCount(ctx context.Context) (int64, error) {
	return s.countCall(ctx, call{name: "GetPlayerCount", method: "GET", path: "/alpha/player/count", idempotent: true})
}

// IsPlayerConnected reports whether a player is connected:
// GET /alpha/player/connected/{playerID}.
func (s *SDK) IsPlayerConnected(ctx context.Context, id string) (bool, error) {
	if err := checkName("player", id); err != nil {
		return false, err
	}
	return s.boolCall(ctx, call{name: "IsPlayerConnected", method: "GET", path: "/alpha/player/connected/" + url.PathEscape(id), idempotent: true})
}

// GetConnectedPlayers returns the connected players' ids:
// GET /alpha/player/connected.
func (s *SDK) GetConnectedPlayers(ctx context.Context) ([]string, error) {
	var w wirePlayerIDList
	if err := s.do(ctx, call{name: "GetConnectedPlayers", method: "GET", path: "/alpha/player/connected", out: &w, idempotent: true}); err != nil {
		return nil, err
	}
	return w.List, nil
}

func (s *SDK) boolCall(ctx context.Context, c call) (bool, error) {
	var w wireBool
	c.out = &w
	err := s.do(ctx, c)
	return w.Bool && err == nil, err
}

func (s *SDK) countCall(ctx context.Context, c call) (int64, error) {
	var w wireCount
	c.out = &w
	if err := s.do(ctx, c); err != nil {
		return 0, err
	}
	return int64(w.Count), nil
}
