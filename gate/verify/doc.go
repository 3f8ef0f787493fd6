// Package verify runs the policy's approved verifiers for the gate: never
// itself, always through fedmem-run with the profile the policy names
// (Runner), and, under `gate run`, outside the gate's lock in a bounded
// pool whose results a later pass takes (Pool). It holds no gate state:
// decide's evidence step asks for a run through decide.Env.
package verify
