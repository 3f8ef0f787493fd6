//go:build !fedmemfault

package sandbox

// FaultVaultWritable is true only in binaries built with the fedmemfault
// tag, which test/escape builds to prove that the mount verification fails
// closed. Release builds cannot turn it on.
const FaultVaultWritable = false
