package sandbox

// SocksPort is where, inside a sandbox whose network goes through
// fedmem-run's proxy (allowlist, public), the agent finds the same proxy
// speaking SOCKS5 (ALL_PROXY=socks5h://127.0.0.1:1080): the one policy for
// TCP clients that do not speak HTTP CONNECT (git over SSH through a
// ProxyCommand, database clients…). Names are resolved by the proxy.
const SocksPort = 1080
