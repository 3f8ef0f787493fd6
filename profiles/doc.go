// Package profiles defines the YAML profile schema that says what an agent
// may see and touch, the built-in profiles embedded in the binaries, and the
// resolution of `extends:` chains.
//
// A Profile is data: nothing here touches the system. It becomes a
// mounts.Plan, which a sandbox backend realises.
package profiles
