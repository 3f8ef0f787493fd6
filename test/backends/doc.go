// Package backends runs one real agent process under each sandbox backend
// (namespace, runc, containerd) as root and holds them to the same
// expectations: the vault read-only with EROFS, the session inbox
// writable, writes outside refused, the agent's exit code and signal, a
// private terminal, never host uid 0. The escape suite runs under each
// backend too (FEDMEM_BACKEND, see testutil.BackendArgs).
package backends
