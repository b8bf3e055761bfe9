package metrics

import (
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// The reason label of netcode_dropped_packets_total: one stable snake_case
// name per codec.DropReason and engine.ServerDropReason, unique over both
// tables. Dashboards and alerts depend on these names, so they never
// change; a reason added to codec or engine needs a name here, or
// TestReasonNames fails. The None reasons are never counted and have none.
var (
	codecReasonNames = [codec.NumDropReasons]string{
		codec.ReasonTooSmall:        "too_small",
		codec.ReasonInvalidType:     "invalid_type",
		codec.ReasonTypeNotAllowed:  "type_not_allowed",
		codec.ReasonSequenceBytes:   "sequence_bytes",
		codec.ReasonTruncated:       "truncated",
		codec.ReasonBodySize:        "body_size",
		codec.ReasonReplayed:        "replayed",
		codec.ReasonNoKey:           "no_key",
		codec.ReasonDecrypt:         "decrypt_failed",
		codec.ReasonRequestSize:     "request_size",
		codec.ReasonVersion:         "version",
		codec.ReasonProtocolID:      "protocol_id",
		codec.ReasonTokenExpired:    "token_expired",
		codec.ReasonTokenDecrypt:    "token_decrypt_failed",
		codec.ReasonTokenUnreadable: "token_unreadable",
		codec.ReasonAddressType:     "address_type",
		codec.ReasonAddressCount:    "address_count",
		codec.ReasonBufferTooSmall:  "buffer_too_small",
	}
	serverReasonNames = [engine.NumServerDropReasons]string{
		engine.ServerDropNotInToken:        "not_in_token",
		engine.ServerDropAddressConnected:  "address_connected",
		engine.ServerDropClientIDConnected: "client_id_connected",
		engine.ServerDropTokenOtherAddress: "token_other_address",
		engine.ServerDropTokenConsumed:     "token_consumed",
		engine.ServerDropTokenHistoryFull:  "token_history_full",
		engine.ServerDropTokenBeforeStart:  "token_before_start",
		engine.ServerDropMappingTableFull:  "mapping_table_full",
		engine.ServerDropChallengeDecrypt:  "challenge_decrypt_failed",
		engine.ServerDropNotConnected:      "not_connected",
		engine.ServerDropChallengeMismatch: "challenge_mismatch",
		engine.ServerDropAppBacklog:        "app_backlog",
		engine.ServerDropRequestRate:       "request_rate",
		engine.ServerDropTokenTooLong:      "token_too_long",
		engine.ServerDropTokenNoTimeout:    "token_no_timeout",
		engine.ServerDropTokenClientLimit:  "token_client_limit",
	}
)

// DropReasonName returns the reason label of a codec drop reason, or ""
// for ReasonNone and unknown reasons.
func DropReasonName(r codec.DropReason) string {
	if r < codec.NumDropReasons {
		return codecReasonNames[r]
	}
	return ""
}

// ServerDropReasonName returns the reason label of a server drop reason,
// or "" for ServerDropNone and unknown reasons.
func ServerDropReasonName(r engine.ServerDropReason) string {
	if r < engine.NumServerDropReasons {
		return serverReasonNames[r]
	}
	return ""
}

// ReliableDropReasonName returns the reason label of a reliable endpoint's
// drop reason: "reliable_" and the reason's name in the reliable vectors
// (e.g. reliable_fragment_stale), or "" for DropNone and unknown reasons.
func ReliableDropReasonName(r reliable.DropReason) string {
	if r == reliable.DropNone || r >= reliable.NumDropReasons {
		return ""
	}
	return "reliable_" + r.String()
}
