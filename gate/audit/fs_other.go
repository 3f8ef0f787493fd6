//go:build !unix

package audit

import (
	"errors"
	"os"
)

var errUnsupported = errors.New("the audit log needs a Unix system (O_NOFOLLOW, openat)")

func openTrustedDir(string) (*os.File, error)              { return nil, errUnsupported }
func openLogFile(*os.File, string, bool) (*os.File, error) { return nil, errUnsupported }
func replaceFile(*os.File, string, []byte) error           { return errUnsupported }
func openForVerify(string, string) (*os.File, error)       { return nil, errUnsupported }
func readForVerify(string, string) ([]byte, error)         { return nil, errUnsupported }
