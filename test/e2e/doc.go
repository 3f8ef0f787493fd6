// Package e2e runs the whole product with the users it is meant for: the
// gate as its own uid (no passwd entry), an agent as another uid inside
// fedmem-run, and a human reviewer — real binaries, a real vault, the git
// CLI to check the result. Root-only (it switches uids); with
// FEDMEM_REQUIRE_ROOT=1 it fails instead of skipping. FEDMEM_BACKEND picks
// the agent's backend (make test-matrix runs runc and containerd too).
package e2e
