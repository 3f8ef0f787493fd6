// Package int80 makes an i386 system call through `int $0x80` from a 64-bit
// process, for tests only: it is how a deny-list written in x86_64 syscall
// numbers gets bypassed when a filter forgets to check seccomp_data.arch.
// On other architectures Available is false.
package int80
