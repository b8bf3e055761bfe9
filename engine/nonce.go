package engine

import "sync/atomic"

// Nonces sealed with a token's server-to-client key never repeat:
//
//   - challenge and denied packets use the global sequence, which starts at
//     2^63, is shared by every server in the process and never goes back
//     (the reference resets it to 2^63 at every start; the restart rule
//     keeps a token from meeting two processes, so either is safe);
//   - keep-alive, payload and disconnect packets use the session sequence,
//     which starts at 0: a token carries one session only (tokenhistory.go),
//     so no other session ever used its keys;
//   - challenge tokens are sealed with a challenge key that is new at every
//     start of a server, their sequence starting at 0 with it.
//
// The client-to-server key is the client's to use; the history is what
// keeps a client that restarts its sequence at 0 from reusing it.

// globalSequenceCount counts sequences handed out by nextGlobalSequence.
var globalSequenceCount atomic.Uint64

// nextGlobalSequence returns the next process-wide sequence, from 2^63 up.
func nextGlobalSequence() uint64 {
	return 1<<63 + globalSequenceCount.Add(1) - 1
}
