// Package boundary holds tests that keep fedmem's trust boundary visible in
// its imports: the untrusted-side launcher (cmd/fedmem-run) links neither
// go-git, gitleaks, the gate nor container runtimes; the gate links no
// sandbox backend; every package of the module says in a doc comment
// what it promises; and no package grows past 4,000 non-test lines (the
// few still over it may only shrink).
//
// The tests read the module through `go list` and go/parser; they build
// nothing and need no root.
package boundary
