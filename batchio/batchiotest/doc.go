// Package batchiotest has test doubles for batchio.Conn, like
// wireguard-go's conn/bindtest: an in-memory network (MemNetwork,
// MemConn), a seeded network simulator (SimConn) and fault injector
// (FaultConn) that wrap any conn, and a scriptable fake (Conn) driven by
// the test. The wrappers implement batchio.Wrapper, so batchio.As finds
// the capabilities of the conn they wrap.
package batchiotest
