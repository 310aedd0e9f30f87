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
// Plain CommonJS with no dependencies: it runs in whatever Node.js the program uses.
"use strict";

const fs = require("fs");
const net = require("net");

const allowedPort = process.env.CACHELINT_ALLOW_PORT || "";
const scenario = process.env.CACHELINT_SCENARIO || "?";
const log = process.env.CACHELINT_REFUSED_LOG || "";
const MAX_LOGGED = 20; // per process: enough to name the hosts, bounded for a program that loops
let logged = 0;

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
    if (asked === null || (isLoopback(asked.host) && String(asked.port) === allowedPort)) {
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
