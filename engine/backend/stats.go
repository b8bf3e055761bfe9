package backend

import "sync/atomic"

// RefusalCodes are the error codes a Handler answers with (ErrorBody.Code),
// in the order HandlerStats.Refused counts them; "other" counts any code
// an Authenticate hook's error maps to that is not listed.
var RefusalCodes = [...]string{
	"method_not_allowed", "bad_request", "body_too_large", "unauthorized", "forbidden",
	"too_many_failures", "rate_limited", "no_servers", "unavailable", "internal", "other",
}

// HandlerStats counts what a Handler answered since it was made.
type HandlerStats struct {
	// Issued counts connect tokens issued.
	Issued uint64
	// Refused counts refused requests by code, in RefusalCodes' order
	// (rate-limited ones under "rate_limited").
	Refused [len(RefusalCodes)]uint64
}

// handlerCounters are a Handler's counters, safe for concurrent requests.
type handlerCounters struct {
	issued  atomic.Uint64
	refused [len(RefusalCodes)]atomic.Uint64
}

func (c *handlerCounters) refuse(code string) {
	i := len(RefusalCodes) - 1
	for k, known := range RefusalCodes {
		if known == code {
			i = k
			break
		}
	}
	c.refused[i].Add(1)
}

// Stats returns the handler's counters. Any goroutine.
func (h *Handler) Stats() HandlerStats {
	var s HandlerStats
	s.Issued = h.counters.issued.Load()
	for i := range s.Refused {
		s.Refused[i] = h.counters.refused[i].Load()
	}
	return s
}
