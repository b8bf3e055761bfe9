package backend

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serveLimited serves a 200 handler on loopback with limits.
func serveLimited(t *testing.T, limits HTTPLimits) string {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on loopback: %v", err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv, ln, err := NewHTTPServer(ok, raw, limits, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return raw.Addr().String()
}

// keepAlive opens a connection and makes one request on it, which stays
// open (keep-alive).
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if status, err := request(c, 5*time.Second); err != nil || status != "HTTP/1.1 200 OK" {
		t.Fatalf("first request: %q, %v", status, err)
	}
	return c
}

// request writes a GET on c and reads the status line within d.
func request(c net.Conn, d time.Duration) (string, error) {
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(d))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// TestHTTPConnectionCap: with MaxConns connections open, the next is not
// served until one closes.
func TestHTTPConnectionCap(t *testing.T) {
	addr := serveLimited(t, HTTPLimits{MaxConns: 2})
	first := keepAlive(t, addr)
	keepAlive(t, addr)
	third, err := net.Dial("tcp", addr) // the kernel accepts it; the server does not
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := request(third, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection over the cap was served: %v", err)
	}
	first.Close()
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(third).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "HTTP/1.1 200 OK" {
		t.Fatalf("after one closed: %q, %v", line, err)
	}
}

// TestHTTPIdleTimeout: an idle keep-alive connection is closed after
// IdleTimeout, which frees its place under the cap.
func TestHTTPIdleTimeout(t *testing.T) {
	addr := serveLimited(t, HTTPLimits{MaxConns: 1, IdleTimeout: 50 * time.Millisecond})
	idle := keepAlive(t, addr)
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle connection not closed by the server: %v", err)
	}
	keepAlive(t, addr)
}

func TestHTTPLimitsDefaults(t *testing.T) {
	l, err := HTTPLimits{}.withDefaults()
	if err != nil || l.MaxConns != DefaultMaxConns || l.ReadHeaderTimeout != DefaultReadHeaderTimeout ||
		l.ReadTimeout != DefaultReadTimeout || l.IdleTimeout != DefaultIdleTimeout || l.MaxHeaderBytes != DefaultMaxHeaderBytes {
		t.Fatalf("%+v, %v", l, err)
	}
	for _, bad := range []HTTPLimits{{MaxConns: -1}, {MaxConns: 1<<20 + 1}, {IdleTimeout: -1}, {ReadTimeout: time.Hour}, {MaxHeaderBytes: 10}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
