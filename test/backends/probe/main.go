// Command probe is the agent of the containerd image test: a static binary,
// alone in an image with no shell, that reports where it runs and what the
// sandbox lets it write, one NAME=OUTCOME line each.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

func outcome(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return errno.Error()
	}
	return err.Error()
}

func main() {
	_, err := os.Stat("/probe-image-marker")
	fmt.Println("image-marker=" + outcome(err))
	_, err = os.Stat("/usr/bin/env")
	fmt.Println("host-usr=" + outcome(err))
	err = os.WriteFile(filepath.Join(os.Getenv("FEDMEM_VAULT"), "10-projects", "from-image.md"), []byte("x"), 0o644)
	fmt.Println("vault=" + outcome(err))
	err = os.WriteFile(filepath.Join(os.Getenv("FEDMEM_INBOX"), "from-image.md"), []byte("type: note\n"), 0o644)
	fmt.Println("inbox=" + outcome(err))
	err = os.WriteFile("/probe-image-marker", []byte("x"), 0o644)
	fmt.Println("rootfs=" + outcome(err))
	os.Exit(3)
}
