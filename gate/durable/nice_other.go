//go:build !linux

package durable

func idlePriority() {}
