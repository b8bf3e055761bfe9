package engine

import "time"

// TokensAdmittedFrom returns the earliest create time of a connect token
// with a lifetime of MaxConnectTokenLifetime that the current run admits:
// the start second plus ConnectTokenClockSkew plus one second. Tokens
// minted earlier may have carried a session in an earlier run, whose
// history is gone, so the restart rule refuses them
// (ServerDropTokenBeforeStart). A token service should not offer a
// freshly started server before then.
func (s *Server) TokensAdmittedFrom() time.Time {
	s.mu.Lock()
	start := s.startedAt
	s.mu.Unlock()
	return time.Unix(start.Unix(), 0).Add(ConnectTokenClockSkew + time.Second)
}

// waitTokens sleeps until TokensAdmittedFrom (at most 3 s with the default
// skew), so that NewServer, Listen and Start return when tokens minted
// from then on are admitted. With a Clock of the caller's it does not wait:
// the caller's time may not move while it sleeps.
func (s *Server) waitTokens() {
	if !s.realClock {
		return
	}
	if d := time.Until(s.TokensAdmittedFrom()); d > 0 {
		time.Sleep(d)
	}
}
