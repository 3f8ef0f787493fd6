// Package clients runs the real agents fedmem wraps — Claude Code (`claude`)
// and the Codex CLI (`codex`), installed from the npm registry — inside
// fedmem-run under their built-in profiles, in a terminal driven by tmux,
// and checks that they start, draw their first screen, write their config
// under $HOME, and change nothing in the vault.
//
// With FEDMEM_REQUIRE_CLIENTS=1 (CI sets it after installing them) a
// missing client or tmux is a failure, not a skip. FEDMEM_BACKEND picks
// fedmem-run's backend (make test-matrix runs runc and containerd too).
package clients
