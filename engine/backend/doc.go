// Package backend is a web backend for netcode: an http.Handler that
// authenticates a player, picks servers and answers with a connect token.
//
// A client POSTs to the handler (any body the game's Authenticate hook
// reads, or none) and receives, with status 200 and Content-Type
// application/json:
//
//	{
//	  "connect_token":   "<standard base64 of the 2048-byte token>",
//	  "client_id":       "12345",                 // decimal string: uint64 does not fit a JSON number
//	  "created_at":      "2026-01-02T15:04:05Z",  // RFC 3339, whole seconds
//	  "expires_at":      "2026-01-02T15:04:35Z",
//	  "expire_seconds":  30,                      // expires_at - created_at
//	  "timeout_seconds": 10,
//	  "servers":         ["203.0.113.7:40000"]    // the token's public addresses, in order
//	}
//
// Browsers ask with the query parameter transport=webtransport (with
// Config.WebTransport set): the token names the servers' WebTransport
// addresses, from its own Directory, and the answer adds
//
//	"transport":          "webtransport",
//	"certificate_hashes": ["<64 hex digits>"]   // SHA-256 of the servers' certificates, when configured
//
// for the page's serverCertificateHashes. Without the parameter, or with
// transport=udp, the answer is as above.
//
// Every failure is a JSON object with a status code to match:
//
//	{"error": {"code": "rate_limited", "message": "too many connect tokens for this client; retry after 2 s"}}
//
// with codes bad_request (400), unauthorized (401), forbidden (403),
// method_not_allowed (405, with Allow: POST), body_too_large (413),
// rate_limited (429, with Retry-After in seconds), internal (500) and
// no_servers or unavailable (503). Responses carry Cache-Control: no-store:
// a token holds the session keys in the clear.
//
// The client id in a token is the one Authenticate returns for the caller,
// never one the caller names, and a server admits one connection per client
// id: the same player cannot hold two sessions on a server.
//
// The private key is never logged, echoed or formatted: Config's LogValue
// and the handler's logs leave it out.
//
// Servers come from a Directory: StaticDirectory (a fixed list),
// HealthDirectory (each server's /readyz and /metrics endpoints, ready
// servers with the most free slots first) or AgonesAllocatorDirectory (the
// Agones allocator service's REST API).
package backend
