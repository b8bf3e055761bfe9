package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/web"
)

// chromium returns Debian's chromium, or skips the test without it (fails
// under CI, whose .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH under CI: .ci/run installs it (apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH: the real-browser test needs Debian's chromium (apt-get install -y chromium)")
	return ""
}

// browser starts a headless chromium with a fresh profile and QUIC on
// (WebTransport runs over it), and returns a tab's context.
func browser(t *testing.T, ctx context.Context) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Containers have a small /dev/shm; the page's timers must not be
		// throttled in a headless tab.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancel)
	tctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelTab)
	return tctx
}

// eval runs an async JavaScript expression in the page and decodes its
// result into out.
func eval(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}

// echoJS connects with a token from the page's backend, sends 1,000
// payloads of 1 to 1200 bytes (an index, then bytes derived from it),
// at most 32 unanswered at a time, checks every echo byte for byte,
// resends a payload unanswered for 500 ms (datagrams may be lost), then
// disconnects.
const echoJS = `(async () => {
  const m = await import("/netcode.js");
  const out = {};
  let t0 = performance.now();
  await m.load();
  out.loadMs = performance.now() - t0;
  const tok = await (await fetch("/api/token", { method: "POST" })).json();
  out.hashes = (tok.certificate_hashes || []).length;
  t0 = performance.now();
  let c;
  try {
    c = await m.connect({ token: tok.connect_token, certificateHashes: tok.certificate_hashes, reliable: true });
  } catch (e) {
    return { error: e.message, state: e.state };
  }
  out.handshakeMs = performance.now() - t0;
  // Round trips one at a time (64 bytes), for the latency figures.
  const rtts = [];
  for (let i = 0; i < 100; i++) {
    const t = performance.now();
    c.send(new Uint8Array(64).fill(i));
    const p = await c.receive();
    rtts.push(performance.now() - t);
    if (p.length !== 64 || p.some((b) => b !== i)) return { error: "ping " + i + " came back changed" };
  }
  rtts.sort((a, b) => a - b);
  out.pingP50 = rtts[50]; out.pingP99 = rtts[98];
  const N = 1000, WINDOW = 32;
  const payload = (i) => {
    const n = 4 + (i * 7919) % 1197;
    const p = new Uint8Array(n);
    new DataView(p.buffer).setUint32(0, i);
    let x = i * 2654435761 >>> 0;
    for (let k = 4; k < n; k++) { x = (x * 1103515245 + 12345) >>> 0; p[k] = x >>> 24; }
    return p;
  };
  const sentAt = new Map();
  const got = new Set();
  let next = 0, mismatched = 0, resent = 0, bytes = 0;
  let wake = null;
  c.onmessage = (p) => {
    if (p.length < 4) { mismatched++; return; }
    const i = new DataView(p.buffer, p.byteOffset, p.byteLength).getUint32(0);
    const want = i < N ? payload(i) : null;
    if (!want || want.length !== p.length || want.some((b, k) => b !== p[k])) { mismatched++; return; }
    if (!got.has(i)) { got.add(i); bytes += p.length; }
    sentAt.delete(i);
    if (wake) { const w = wake; wake = null; w(); }
  };
  const t1 = performance.now();
  while (got.size < N && performance.now() - t1 < 20000) {
    while (next < N && sentAt.size < WINDOW) {
      c.send(payload(next));
      sentAt.set(next, performance.now());
      next++;
    }
    const now = performance.now();
    for (const [i, at] of sentAt) {
      if (now - at > 500) { c.send(payload(i)); sentAt.set(i, now); resent++; }
    }
    await new Promise((r) => { wake = r; setTimeout(r, 50); });
  }
  out.echoMs = performance.now() - t1;
  out.received = got.size;
  out.bytes = bytes;
  out.mismatched = mismatched;
  out.resent = resent;
  out.rtt = c.rtt;
  out.stateBefore = c.state;
  await c.disconnect();
  out.stateAfter = c.state;
  out.stats = c.stats();
  out.benchNs = await m.bench(20000, 100);
  return out;
})()`

// reuseJS connects with a token, disconnects, and connects again with the
// same token, which the server must refuse.
const reuseJS = `(async () => {
  const m = await import("/netcode.js");
  const tok = await (await fetch("/api/token", { method: "POST" })).json();
  const opts = { token: tok.connect_token, certificateHashes: tok.certificate_hashes, reliable: true, timeoutMs: 10000 };
  let c;
  try { c = await m.connect(opts); } catch (e) { return { first: e.state || e.message }; }
  const first = c.state;
  await c.disconnect();
  try {
    c = await m.connect(opts);
    await c.disconnect();
    return { first, second: "connected" };
  } catch (e) {
    return { first, second: e.state || e.message };
  }
})()`

// expiredJS connects with a token the backend got from a token service
// whose clock is behind.
const expiredJS = `(async () => {
  const m = await import("/netcode.js");
  const tok = await (await fetch("/api/token", { method: "POST" })).json();
  try {
    const c = await m.connect({ token: tok.connect_token, certificateHashes: tok.certificate_hashes, reliable: true, timeoutMs: 10000 });
    await c.disconnect();
    return { state: "connected", expires: tok.expires_at };
  } catch (e) {
    return { state: e.state || e.message, expires: tok.expires_at };
  }
})()`

// TestBrowser runs the page's client in a real headless chromium against
// the demo (server with the echo game, token service, backend): 1,000
// payloads echoed byte for byte and a disconnect the server sees as one;
// a reused token and an expired token refused by the server.
func TestBrowser(t *testing.T) {
	chromium(t)
	// Compiling the wasm on a cold build cache (a fresh CI machine) takes
	// longer than everything else, so it has a bound of its own.
	bctx, bcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer bcancel()
	dist := t.TempDir()
	begin := time.Now()
	if err := web.Build(bctx, dist); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dist + "/netcode.wasm"); err == nil {
		t.Logf("built netcode.wasm: %d bytes in %v", st.Size(), time.Since(begin).Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var skew atomic.Int64 // the token service's clock offset, ns
	loop := netip.MustParseAddrPort("127.0.0.1:0")
	d, err := start(ctx, config{HTTP: loop, UDP: loop, WebTransport: loop, Dist: dist,
		tokenClock: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	tab := browser(t, ctx)
	if _, err := chromedp.Run(tab, chromedp.Navigate(d.URL())); err != nil {
		t.Fatalf("navigate to %s: %v", d.URL(), err)
	}

	t.Run("echo", func(t *testing.T) {
		var r struct {
			Error, State                string
			Hashes                      int
			LoadMs, HandshakeMs, EchoMs float64
			PingP50, PingP99, BenchNs   float64
			Received, Bytes, Mismatched int
			Resent                      int
			RTT                         float64
			StateBefore, StateAfter     string
			Stats                       map[string]float64
		}
		eval(t, tab, echoJS, &r)
		if r.Error != "" {
			t.Fatalf("page: %s (state %q)", r.Error, r.State)
		}
		t.Logf("wasm load %.1f ms; handshake %.1f ms; 100 pings p50 %.2f ms p99 %.2f ms; 1000 echoes (%d bytes) in %.1f ms, %d resent; rtt %.2f ms; seal+open %.0f ns per 100-byte payload; client %v",
			r.LoadMs, r.HandshakeMs, r.PingP50, r.PingP99, r.Bytes, r.EchoMs, r.Resent, r.RTT, r.BenchNs, r.Stats)
		t.Logf("server transport: %+v", d.wt.TransportStats())
		if r.Hashes != 1 {
			t.Errorf("token response had %d certificate hashes; want 1", r.Hashes)
		}
		if r.Received != 1000 || r.Mismatched != 0 {
			t.Fatalf("echoed %d of 1000 payloads, %d mismatched", r.Received, r.Mismatched)
		}
		if r.StateBefore != "connected" || r.StateAfter != "disconnected" {
			t.Errorf("states %q before and %q after disconnect; want connected, disconnected", r.StateBefore, r.StateAfter)
		}
		if !(r.RTT > 0) {
			t.Errorf("rtt %v; want a positive estimate from the reliable endpoint", r.RTT)
		}
		// The server saw the client leave by its disconnect packets, well
		// before the token's 5 s timeout could have.
		waitFor(t, 2*time.Second, "a client disconnect at the server", func() bool {
			return d.left[engine.DisconnectClientDisconnected].Load() == 1
		})
		if n := d.left[engine.DisconnectTimedOut].Load(); n != 0 {
			t.Errorf("%d clients timed out at the server; want 0", n)
		}
		if n := d.connects.Load(); n != 1 {
			t.Errorf("server saw %d connects; want 1", n)
		}
		if n := d.echoed.Load(); n < 1000 {
			t.Errorf("server echoed %d payloads; want at least 1000", n)
		}
	})

	t.Run("reused token", func(t *testing.T) {
		before := d.srv.Stats()
		connects := d.connects.Load()
		var r struct{ First, Second string }
		eval(t, tab, reuseJS, &r)
		after := d.srv.Stats()
		if r.First != "connected" {
			t.Fatalf("first connect: %s; want connected", r.First)
		}
		if r.Second != engine.ConnectionRequestUnanswered.String() {
			t.Errorf("second connect with the same token: %s; want %q", r.Second, engine.ConnectionRequestUnanswered)
		}
		if got := d.connects.Load() - connects; got != 1 {
			t.Errorf("server saw %d connects; want 1 (the token's first)", got)
		}
		consumed := after.Drops[engine.ServerDropTokenConsumed] - before.Drops[engine.ServerDropTokenConsumed]
		if consumed == 0 {
			t.Errorf("server counted no request with a consumed token; drops %v", after.Drops)
		}
	})

	t.Run("expired token", func(t *testing.T) {
		// Minted 40 s ago with a 30 s life: it expired 10 s ago.
		skew.Store(int64(-40 * time.Second))
		defer skew.Store(0)
		before := d.srv.Stats()
		connects := d.connects.Load()
		var r struct{ State, Expires string }
		eval(t, tab, expiredJS, &r)
		after := d.srv.Stats()
		if r.State != engine.ConnectionRequestUnanswered.String() {
			t.Errorf("connect with a token that expired at %s: %s; want %q", r.Expires, r.State, engine.ConnectionRequestUnanswered)
		}
		if got := d.connects.Load() - connects; got != 0 {
			t.Errorf("server saw %d connects; want 0", got)
		}
		expired := after.CodecDrops[codec.ReasonTokenExpired] - before.CodecDrops[codec.ReasonTokenExpired]
		if expired == 0 {
			t.Errorf("server counted no expired-token drop; codec drops %v", after.CodecDrops)
		}
		// The refused client closed its session itself instead of leaving
		// it to the server's 5 s handshake timeout.
		waitFor(t, 2*time.Second, "session closed by the refused page", func() bool {
			return d.wt.TransportStats().Sessions == 0
		})
		if n := d.wt.TransportStats().ClosedHandshake; n != 0 {
			t.Errorf("server closed %d sessions for their handshake timeout; want 0", n)
		}
	})

	// The example page itself: Connect, payloads echoed on its 50 ms
	// timer, the round trips shown, Disconnect.
	t.Run("page", func(t *testing.T) {
		text := func(id string) string {
			s, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("`+id+`").textContent`))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		left := d.left[engine.DisconnectClientDisconnected].Load()
		if _, err := chromedp.Run(tab, chromedp.Click("#connect")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "20 echoes shown on the page", func() bool {
			var n int
			_, err := fmt.Sscan(text("echoed"), &n)
			return err == nil && n >= 20
		})
		if st, bad, p50 := text("state"), text("bad"), text("p50"); st != "connected" || bad != "0" || p50 == "-" {
			t.Errorf("page shows state %q, %s mismatched, p50 %q; want connected, 0 and a round trip", st, bad, p50)
		}
		if _, err := chromedp.Run(tab, chromedp.Click("#disconnect")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, "the page's disconnect at the server", func() bool {
			return d.left[engine.DisconnectClientDisconnected].Load() == left+1
		})
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
