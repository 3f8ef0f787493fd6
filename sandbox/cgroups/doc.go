// Package cgroups places a fedmem session in cgroups that enforce its
// memory, pids and cpu limits, on cgroup v2 (a sub-cgroup of a delegated
// subtree, entered with CLONE_INTO_CGROUP) or on cgroup v1 (per-controller
// directories the init is moved into before it reads its config), and says
// truthfully, per controller, which hierarchy holds it and whether fedmem
// can enforce a limit with it here.
//
// Everything goes through Host, whose Root is the cgroup filesystem root
// (/sys/fs/cgroup on a real host): the unit tests run the same code
// against a directory of ordinary files in t.TempDir().
package cgroups
