// Package mounts builds the mount Plan of a sandbox — pure data computed from
// a profile, a vault, a workdir and a home directory — and verifies a live
// mount table against it.
//
// Nothing in this package touches the system: Build is a function of its
// inputs, and Verify reads mountinfo through an io.Reader so that it can be
// tested on fixture text without root. Backends (package sandbox) realise a
// Plan; they never decide what is mounted.
package mounts
