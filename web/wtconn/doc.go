// Package wtconn is the browser side of the WebTransport transport: a
// batchio.Conn that carries netcode packets, unchanged, as datagrams of
// WebTransport sessions that the browser opens to the server addresses in
// the connect token (https://ADDR/netcode). One session is one server
// address; datagrams it receives are read with that address as their
// source, so the engine's client checks them exactly as it checks UDP.
//
// It is built for GOOS=js GOARCH=wasm (package web/wasm is the program);
// on other systems only its bounded receive queue is compiled, for the
// tests.
package wtconn
