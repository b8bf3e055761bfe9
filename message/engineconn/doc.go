// Package engineconn runs message channels over the engine's reliable
// endpoints: a message.Conn per client on a server, one on a client.
//
// It is a subpackage, not part of the engine, so that the engine stays
// unaware of messages (a game that wants only packets and acks pays for
// nothing) and package message stays free of the engine (it runs over any
// packet layer with sequences and acks). Both sides must set
// ServerConfig.Reliable / ClientConfig.Reliable and use the same
// message.Config.
//
// The adapters own the connection's payloads: every payload a client
// sends or receives is a message packet. A game ticks them: on the
// server, Handle every polled event, then Flush once per tick; on the
// client, Update after the engine client's Update, then Flush once per
// tick. Flush sends one packet per connection every tick, empty or not,
// so that acks and credits flow both ways.
package engineconn
