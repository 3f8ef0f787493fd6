//go:build !linux

package intake

import (
	"errors"
	"os"
)

// ErrUnsupported: claiming drafts safely needs openat2 (Linux 5.6+).
var ErrUnsupported = errors.New("the gate needs Linux (openat2)")

// ErrBusy is returned when another gate holds the state directory.
var ErrBusy = errors.New("gate busy")

// Inbox is the vault's inbox folder (Linux only).
type Inbox struct{}

func Open(string) (*Inbox, error)                                   { return nil, ErrUnsupported }
func (in *Inbox) Close()                                            {}
func (in *Inbox) FD() int                                           { return -1 }
func (in *Inbox) Sessions() ([]string, error)                       { return nil, ErrUnsupported }
func (in *Inbox) SessionOwner(string) (int, error)                  { return -1, ErrUnsupported }
func (in *Inbox) AccessHint(string, error) string                   { return "" }
func (in *Inbox) WriteReceipt(string, string, []byte, string) error { return ErrUnsupported }
func (in *Inbox) WriteReceiptSpare(string, string, []byte, string, *os.File, string) error {
	return ErrUnsupported
}
func LockState(string) (func(), error) { return nil, ErrUnsupported }
func SameFS(a, b string) (bool, error) { return false, ErrUnsupported }
func OwnerOf(string) (int, error)      { return -1, ErrUnsupported }
