//go:build !linux

package readers

import (
	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/origin"
)

// Store needs the Linux inbox (openat2): elsewhere nothing is stored.
func Store(*intake.Inbox, string, func(string) origin.Origin, func(string, map[string]any) error) (int, []string) {
	return 0, nil
}
