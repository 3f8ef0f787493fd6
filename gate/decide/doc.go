// Package decide judges one validated draft into a verdict: its shape, the
// trust-bearing keys it claims, the origin the gate proved for its session,
// and its evidence (sources resolved at the branch HEAD, verifiers, notes in
// force it would conflict with). Judge takes plain data (Input) and returns
// a Verdict; it writes nothing. What it reads of the vault it reads through
// HeadView, one commit's tree, never the work tree or the draft's claims
// about itself. The gate lends it the repository, the clock and the
// verifiers through Env.
package decide
