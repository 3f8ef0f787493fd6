//go:build fedmemfault

package sandbox

// FaultVaultWritable makes buildRoot bind the vault writable — the mistake
// the live verification must catch before any agent runs. Only the
// fedmemfault build (test/escape's fault binary) has it.
const FaultVaultWritable = true
