package engine

import "strconv"

// ClientState is where a client is in the connection process. The numbers
// are the standard's: negative states are errors, 0 is the initial
// Disconnected state and 3 (Connected) is the goal.
type ClientState int8

// The client states of the netcode 1.02 standard, with its numbers, and
// ConnectionRequestUnanswered, which the standard does not have.
const (
	// ConnectionRequestUnanswered: no server in the token answered the
	// client's requests within ClientConfig.NoChallengeTimeout. Its token
	// may be pending for another address at the server (an on-path
	// observer sent a copy of the first request first), which refuses it
	// from this client for its whole life: fetch a fresh token at once.
	ConnectionRequestUnanswered ClientState = -7
	ConnectTokenExpired         ClientState = -6
	InvalidConnectToken         ClientState = -5
	ConnectionTimedOut          ClientState = -4
	ConnectionResponseTimedOut  ClientState = -3
	ConnectionRequestTimedOut   ClientState = -2
	ConnectionDenied            ClientState = -1
	Disconnected                ClientState = 0
	SendingConnectionRequest    ClientState = 1
	SendingConnectionResponse   ClientState = 2
	Connected                   ClientState = 3
)

var clientStateNames = [...]string{
	"connection request unanswered",
	"connect token expired",
	"invalid connect token",
	"connection timed out",
	"connection response timed out",
	"connection request timed out",
	"connection denied",
	"disconnected",
	"sending connection request",
	"sending connection response",
	"connected",
}

func (s ClientState) String() string {
	if s >= ConnectionRequestUnanswered && s <= Connected {
		return clientStateNames[s-ConnectionRequestUnanswered]
	}
	return "ClientState(" + strconv.Itoa(int(s)) + ")"
}

// IsError reports whether s is one of the negative error states.
func (s ClientState) IsError() bool { return s < Disconnected }

// IsConnecting reports whether s is a handshake state: the client is
// sending connection requests or responses.
func (s ClientState) IsConnecting() bool {
	return s == SendingConnectionRequest || s == SendingConnectionResponse
}
