package launch

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAttachStdioFailsClosed: when a pipe cannot be made (out of file
// descriptors here, a real EMFILE), attaching stdio that needs a relay is
// refused with the reason — never a fallback that hands the agent what it
// should not hold — and whatever was opened is released.
func TestAttachStdioFailsClosed(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	// Room for what is open now and one more (os.Pipe needs two).
	low := lim
	low.Cur = uint64(len(ents)) + 1
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, aerr := attachStdio(strings.NewReader(""), &out, &out, false)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if aerr == nil {
		s.release()
		t.Fatal("attachStdio succeeded without the file descriptors for its pipes")
	}
	if !strings.Contains(aerr.Error(), "cannot make a pipe") || !strings.Contains(aerr.Error(), "too many open files") {
		t.Errorf("error %q does not say why", aerr)
	}
	// With descriptors available the same call relays.
	s, err = attachStdio(strings.NewReader(""), &out, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.out.WriteString("relayed\n"); err != nil {
		t.Fatal(err)
	}
	t.Logf("out %v err %v", s.out.Name(), s.err.Name())
	s.release()
	if out.String() != "relayed\n" {
		t.Errorf("relay: %q", out.String())
	}
}
