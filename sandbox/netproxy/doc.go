// Package netproxy is the network policy of a sandbox with its own network
// namespace: an HTTP proxy (CONNECT and plain HTTP) that runs outside the
// sandbox, in fedmem-run, and lets a connection through only where the
// policy allows. Two modes share one path: Allowlist (only the profile's
// host:port pairs) and Public (any public address). Names are resolved
// here, never inside the sandbox; loopback, link-local, private,
// cloud-metadata, multicast, unspecified and other non-public ranges, and
// the host's own addresses, are refused after resolution (in Allowlist
// mode an address the profile names itself is allowed), and the proxy dials
// exactly the address it checked. Every decision is reported to a callback
// (the session's events).
//
// The sandbox reaches the proxy only through connections its pid 1 hands
// over a unix socket; the proxy never listens on a network address.
package netproxy
