// Replay fails closed in Node.js children: the guard sitecustomize.py puts on Python ones.
//
// In replay, a `command` target's program runs with NODE_OPTIONS="--require <this file>", so every
// Node.js process it starts (and their children, which inherit the environment) loads it first.
// Node's fetch and its http and https modules ignore the proxy variables, so the refusing proxy
// does not stop them. Every TCP connection a Node.js program opens (http, https, tls, fetch,
// WebSockets) goes through net.Socket's `connect`, so that is where one to anywhere but the cache
// endpoint (loopback, CACHELINT_ALLOW_PORT) is refused, before any lookup or packet: the socket
// fails with ECONNREFUSED, naming the scenario and the host, and the host is appended to
// CACHELINT_REFUSED_LOG, so the scenario fails even when the program swallows the error. A
// connection to a socket path is local IPC and is left alone.
//
// Name lookups leave the process too (a DNS query names the host to the resolver), so the `dns`
// module is guarded as the Python guard refuses getaddrinfo and getnameinfo: `lookup` of
// anything but a loopback name, `lookupService` of anything but a loopback address, and every
// query of the resolver (`resolve*`, `reverse`: c-ares asks the DNS server even for localhost),
// in the callback API, the promise API (`dns.promises`, `dns/promises`) and on `Resolver`s,
// fail with ECONNREFUSED the same way. Node's internal bindings and native addons stay out of
// reach (docs/security.md).
//
// Plain CommonJS with no dependencies: it runs in whatever Node.js the program uses.
"use strict";

const dns = require("dns");
const fs = require("fs");
const net = require("net");

const allowedPort = process.env.CACHELINT_ALLOW_PORT || "";
const scenario = process.env.CACHELINT_SCENARIO || "?";
const log = process.env.CACHELINT_REFUSED_LOG || "";
const MAX_LOGGED = 20; // per process: enough to name the hosts, bounded for a program that loops
let logged = 0;

// `allow-hosts` (CACHELINT_ALLOW_HOSTS: `host:port` items, commas between, validated by cachelint):
// the agent's own services, let through at their port; `localhost` stands for every loopback
// address. Addresses on both sides are compared as Python's guards compare them (`canonical`), so
// `[::1]:6379`, `::1:6379` and `[0:0:0:0:0:0:0:1]:6379` name one service, whichever way the
// program writes the address it connects to.
const allowHosts = (process.env.CACHELINT_ALLOW_HOSTS || "")
  .split(",")
  .map((item) => item.trim())
  .filter((item) => item.lastIndexOf(":") > 0)
  .map((item) => {
    const at = item.lastIndexOf(":");
    return { host: canonical(item.slice(0, at)), port: item.slice(at + 1) };
  });

// An address as Python's `ipaddress` writes it (`compressed`): brackets and an IPv6 zone dropped,
// lowercase, each group without leading zeros, the longest run of two or more zero groups (the
// first of equal runs) as "::", an IPv4 tail as two groups. A name is only lowercased.
function canonical(host) {
  const name = String(host).toLowerCase().replace(/^\[(.*)\]$/, "$1");
  const bare = name.split("%")[0];
  if (!net.isIPv6(bare)) {
    return name;
  }
  let text = bare;
  const tail = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(2).map(Number);
    text = `${tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  const split = (part) => (part ? part.split(":") : []);
  const head = split(halves[0]);
  const rest = halves.length > 1 ? split(halves[1]) : [];
  const zeros = halves.length > 1 ? Array(8 - head.length - rest.length).fill("0") : [];
  const groups = [...head, ...zeros, ...rest].map((g) => parseInt(g, 16).toString(16));
  let best = 0;
  let length = 0;
  for (let i = 0; i < groups.length; ) {
    let j = i;
    while (j < groups.length && groups[j] === "0") {
      j += 1;
    }
    if (j - i > length) {
      [best, length] = [i, j - i];
    }
    i = j > i ? j : i + 1;
  }
  if (length < 2) {
    return groups.join(":");
  }
  return `${groups.slice(0, best).join(":")}::${groups.slice(best + length).join(":")}`;
}

function listed(host, port) {
  const name = canonical(host);
  return allowHosts.some(
    (allowed) =>
      String(port) === allowed.port &&
      (name === allowed.host ||
        (allowed.host === "localhost" && isLoopback(name)) ||
        (!net.isIP(name) && isLoopback(name) && isLoopback(allowed.host))),
  );
}

function isLoopback(host) {
  const name = String(host).toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (name === "localhost" || name === "localhost." || name === "ip6-localhost") {
    return true;
  }
  if (net.isIPv4(name)) {
    return name.startsWith("127.");
  }
  return net.isIPv6(name) && /^(?:(?:0{0,4}:){2,7}0{0,3}1|::ffff:127\.[0-9.]+)$/.test(name);
}

// (host, port) of what `connect` was asked, or null for a socket path. Node's own callers pass
// their normalized arguments as one array: [options, callback].
function target(args) {
  let first = args[0];
  if (Array.isArray(first)) {
    first = first[0];
  }
  if (first !== null && typeof first === "object") {
    if (first.path !== undefined && first.path !== null) {
      return null;
    }
    return { host: first.host || "localhost", port: first.port };
  }
  if (typeof first === "string" && !/^[0-9]+$/.test(first)) {
    return null;
  }
  const host = typeof args[1] === "string" ? args[1] : "localhost";
  return { host, port: first };
}

function record(shown) {
  if (!log || logged >= MAX_LOGGED) {
    return;
  }
  logged += 1;
  try {
    fs.appendFileSync(log, shown + "\n");
  } catch {
    // the error the socket fails with still fails the program
  }
}

if (allowedPort) {
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (...args) {
    const asked = target(args);
    if (
      asked === null ||
      (isLoopback(asked.host) && String(asked.port) === allowedPort) ||
      listed(asked.host, asked.port)
    ) {
      return connect.apply(this, args);
    }
    const shown = `${asked.host}:${asked.port}`;
    record(shown);
    const error = new Error(
      `cachelint: scenario ${scenario}: replay mode refuses network access to ${shown}; ` +
        "the answer must come from the cache (call OPENAI_BASE_URL)",
    );
    error.code = "ECONNREFUSED";
    process.nextTick(() => this.destroy(error));
    return this;
  };
}

// The resolver's queries: each asks the DNS server, whatever the name.
const QUERIES = [
  "resolve",
  "resolveAny",
  "resolve4",
  "resolve6",
  "resolveCaa",
  "resolveCname",
  "resolveMx",
  "resolveNaptr",
  "resolveNs",
  "resolvePtr",
  "resolveSoa",
  "resolveSrv",
  "resolveTxt",
  "reverse",
];

function refusal(shown) {
  record(shown);
  const error = new Error(
    `cachelint: scenario ${scenario}: replay mode refuses network access to ${shown}; ` +
      "the answer must come from the cache (call OPENAI_BASE_URL)",
  );
  error.code = "ECONNREFUSED";
  return error;
}

// What a dns function of `name` is asked to look up, shown; null when it stays on this machine.
function refused(name, args) {
  const first = args[0];
  if (name === "lookup") {
    return !first || isLoopback(first) ? null : String(first);
  }
  if (name === "lookupService") {
    return isLoopback(first) ? null : `${first}:${args[1]}`;
  }
  return String(first);
}

// `original` (a function of the callback API) refusing what `refused` names: the callback, its
// last argument, is called with the error, as a failed lookup would. Anything else (a missing
// callback) goes to the original, which throws on it.
function guardCallback(name, original) {
  const guarded = function (...args) {
    const shown = refused(name, args);
    const callback = args[args.length - 1];
    if (shown === null || typeof callback !== "function") {
      return original.apply(this, args);
    }
    const error = refusal(shown);
    process.nextTick(() => callback(error));
    return {};
  };
  // util.promisify's hints (lookup resolves to {address, family}) are kept.
  for (const symbol of Object.getOwnPropertySymbols(original)) {
    Object.defineProperty(guarded, symbol, Object.getOwnPropertyDescriptor(original, symbol));
  }
  return guarded;
}

function guardPromise(name, original) {
  return function (...args) {
    const shown = refused(name, args);
    return shown === null ? original.apply(this, args) : Promise.reject(refusal(shown));
  };
}

function guardAll(target, names, guard) {
  for (const name of names) {
    if (target && typeof target[name] === "function") {
      target[name] = guard(name, target[name]);
    }
  }
}

if (allowedPort) {
  const callbacks = ["lookup", "lookupService", ...QUERIES];
  guardAll(dns, callbacks, guardCallback);
  guardAll(dns.Resolver && dns.Resolver.prototype, QUERIES, guardCallback);
  const promises = dns.promises;
  guardAll(promises, callbacks, guardPromise);
  guardAll(promises && promises.Resolver && promises.Resolver.prototype, QUERIES, guardPromise);
}
