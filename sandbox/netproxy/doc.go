// Package netproxy is the network allowlist of a sandbox: an HTTP proxy
// (CONNECT and plain HTTP) that runs outside the sandbox, in fedmem-run,
// and lets a connection through only to a host and port the profile
// allows. Names are resolved here, never inside the sandbox, and a name
// that resolves into loopback, link-local, private, cloud-metadata or other
// non-public ranges is refused unless the profile names that address
// itself. Every decision is reported to a callback (the session's events).
//
// The sandbox reaches the proxy only through connections its pid 1 hands
// over a unix socket; the proxy never listens on a network address.
package netproxy
