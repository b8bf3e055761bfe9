// Package message carries messages over reliable 1.0 packets: channels of
// reliable-ordered, reliable-unordered and unreliable messages, and blocks
// (large one-off payloads) sent as fragments, all in packets that never
// need fragmenting.
//
// A Conn is one side of a connection. The caller owns the packet layer (a
// reliable.Endpoint, or the engine's reliable endpoints): for every packet
// it sends it asks the Conn to fill it (WritePacket, naming the reliable
// sequence the packet will carry); every packet it receives it hands to
// ReadPacket; every ack its endpoint reports it hands to Ack. Acked
// packets release the messages they carried; a reliable message not acked
// within its channel's resend time goes out again in a later packet.
//
// Everything is sized by the Config up front: queues, sent-packet records,
// block buffers. A full send queue is an error to the sender, never a drop
// or growth. Receivers advertise how far the application has read each
// reliable channel (a credit), so a sender never sends a message its peer
// has no room for; an acked message is therefore never dropped. A peer
// that stops acking is reported by Stalled.
//
// The wire format is specified in PROTOCOL.md beside this file.
//
// A Conn is not safe for concurrent use: one goroutine owns it. No method
// allocates after New.
package message
