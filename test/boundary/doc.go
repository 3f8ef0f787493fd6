// Package boundary holds tests that keep fedmem's trust boundary visible in
// its imports: the untrusted-side launcher (cmd/fedmem-run) links neither
// go-git, gitleaks, the gate nor container runtimes; the gate links no
// sandbox backend; and every package of the module says in a doc comment
// what it promises.
//
// The tests read the module through `go list` and go/parser; they build
// nothing and need no root.
package boundary
