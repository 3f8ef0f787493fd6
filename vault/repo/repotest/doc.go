// Package repotest runs the Git CLI against vaults in tests: the real git
// binary is the judge of what vault/repo and the gate write. Every call passes
// -c safe.directory=* because test vaults belong to a gate uid that is not
// the test's own, which Git otherwise refuses ("dubious ownership"), and
// --no-optional-locks so that looking (git status) never rewrites the index as
// the test user.
package repotest
