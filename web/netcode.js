// netcode.js: a netcode client for web pages. The protocol is this
// project's Go client compiled to WebAssembly (netcode.wasm, with Go's
// wasm_exec.js beside it); packets travel as WebTransport datagrams.
//
//   import { connect } from "./netcode.js";
//   const client = await connect({ tokenURL: "/api/token" });
//   client.onmessage = (payload) => { ... };   // Uint8Array
//   client.send(new Uint8Array([1, 2, 3]));
//   await client.disconnect();
//
// connect resolves once the client is connected and rejects with a
// NetcodeError whose state names why not ("connection request
// unanswered" for a token the server refused, "connect token expired", ...).
// One client per page: connecting again ends the previous session.

const base = new URL(".", import.meta.url);

// Client states (the netcode standard's numbers).
export const State = Object.freeze({
  ConnectionRequestUnanswered: -7,
  ConnectTokenExpired: -6,
  InvalidConnectToken: -5,
  ConnectionTimedOut: -4,
  ConnectionResponseTimedOut: -3,
  ConnectionRequestTimedOut: -2,
  ConnectionDenied: -1,
  Disconnected: 0,
  SendingConnectionRequest: 1,
  SendingConnectionResponse: 2,
  Connected: 3,
});

export class NetcodeError extends Error {
  constructor(message, state) {
    super(message);
    this.name = "NetcodeError";
    this.state = state; // the client's state name when it failed, if any
  }
}

let loading = null;

// load fetches and starts netcode.wasm once; connect calls it.
export function load({ wasmURL = new URL("netcode.wasm", base) } = {}) {
  if (!loading) {
    loading = (async () => {
      if (!globalThis.Go) {
        await import(new URL("wasm_exec.js", base).href);
      }
      const go = new globalThis.Go();
      const api = new Promise((resolve) => { globalThis.__netcodeInit = resolve; });
      const { instance } = await WebAssembly.instantiateStreaming(fetch(wasmURL), go.importObject);
      go.run(instance); // runs until the page closes
      const got = await api;
      delete globalThis.__netcodeInit;
      return got;
    })();
    loading.catch(() => { loading = null; });
  }
  return loading;
}

let current = null;

class Client {
  constructor(api) {
    this._api = api;
    this._queue = [];
    this._maxQueue = 1024;
    this._waiters = [];
    this._stateWaiters = [];
    // onmessage(payload Uint8Array): every received payload; without
    // it, payloads wait for receive() (at most 1024, the oldest dropped).
    this.onmessage = null;
    // onstatechange(name string, code number)
    this.onstatechange = null;
  }

  // state is the client's state name ("connected", ...).
  get state() { return this._api.state().name; }
  get stateCode() { return this._api.state().code; }
  // rtt is the least round trip in ms over the reliable endpoint's last
  // 512 acks (connect with reliable: true), NaN without one: the path's,
  // without the server's wait for a packet to carry the ack.
  get rtt() { return this._api.rtt(); }
  stats() { return this._api.stats(); }

  // send sends one payload (1 to 1200 bytes, or up to 16 KiB with
  // reliable: true) at once; it throws a NetcodeError when it cannot.
  send(payload) {
    if (!(payload instanceof Uint8Array)) {
      throw new TypeError("send: want a Uint8Array");
    }
    const err = this._api.send(payload);
    if (err) throw new NetcodeError(err, this.state);
  }

  // receive resolves with the next payload.
  receive() {
    if (this._queue.length > 0) return Promise.resolve(this._queue.shift());
    return new Promise((resolve) => this._waiters.push(resolve));
  }

  // disconnect ends the session with the standard's disconnect packets
  // and resolves once the browser has sent them.
  disconnect() { return this._api.disconnect(); }

  _payloads(batch) {
    for (const p of batch) {
      if (this.onmessage) {
        this.onmessage(p);
      } else if (this._waiters.length > 0) {
        this._waiters.shift()(p);
      } else {
        if (this._queue.length === this._maxQueue) this._queue.shift();
        this._queue.push(p);
      }
    }
  }

  _state(code, name) {
    if (this.onstatechange) this.onstatechange(name, code);
    const waiters = this._stateWaiters;
    this._stateWaiters = [];
    for (const w of waiters) w(code, name);
  }
}

function decodeToken(token) {
  if (token instanceof Uint8Array) return token;
  if (typeof token === "string") {
    return Uint8Array.from(atob(token), (c) => c.charCodeAt(0));
  }
  throw new TypeError("token: want base64 text or a Uint8Array");
}

function decodeHash(h) {
  if (h instanceof Uint8Array) return h;
  if (typeof h === "string" && /^[0-9a-fA-F]{64}$/.test(h)) {
    return Uint8Array.from(h.match(/../g), (b) => parseInt(b, 16));
  }
  throw new TypeError("certificateHashes: want 64 hex digits or 32 bytes each");
}

// connect gets a connect token (tokenURL: POSTed to, answering the token
// service's JSON; or token: base64 or bytes), connects and resolves with
// the client. Options: certificateHashes (hex or bytes; they default to
// the token response's certificate_hashes), reliable (reliable endpoints,
// for a server run with them), path ("/netcode"), wasmURL, timeoutMs.
export async function connect({
  tokenURL, token, certificateHashes, reliable = false, path = "/netcode",
  wasmURL, timeoutMs = 15000,
} = {}) {
  const api = await load(wasmURL ? { wasmURL } : undefined);
  if (tokenURL) {
    const res = await fetch(tokenURL, { method: "POST" });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      throw new NetcodeError(`token: ${res.status} ${body.error ? body.error.message : res.statusText}`);
    }
    token = body.connect_token;
    certificateHashes = certificateHashes || body.certificate_hashes;
  }
  if (!token) throw new TypeError("connect: give tokenURL or token");
  const client = new Client(api);
  current = client;
  api.setHandlers(
    (code, name) => { if (current === client) client._state(code, name); },
    (batch) => { if (current === client) client._payloads(batch); },
  );
  const settled = new Promise((resolve) => {
    const check = (code, name) => {
      if (code === State.Connected || code <= State.Disconnected) resolve([code, name]);
      else client._stateWaiters.push(check);
    };
    client._stateWaiters.push(check);
  });
  const err = api.connect(decodeToken(token), (certificateHashes || []).map(decodeHash), path, reliable);
  if (err) throw new NetcodeError(err, client.state);
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve([null, "timed out"]), timeoutMs);
  });
  const [code, name] = await Promise.race([settled, timeout]);
  clearTimeout(timer);
  if (code !== State.Connected) {
    throw new NetcodeError(`netcode: not connected: ${name}`, name);
  }
  return client;
}

// bench seals and opens n payloads of size bytes in the wasm, as client
// and server do per payload, and resolves with nanoseconds per payload.
export async function bench(n = 10000, size = 100) {
  const api = await load();
  return api.bench(n, size);
}
