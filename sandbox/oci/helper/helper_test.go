package helper

import (
	"flag"
	"io"
	"testing"
)

// TestRunFlagsRoundTrip: what fedmem-run writes (Args) is what a helper
// reads (Register), every field, and the defaults say "none" (-1) for the
// descriptors a caller did not give.
func TestRunFlagsRoundTrip(t *testing.T) {
	want := RunFlags{Bundle: "/run/fedmem/runc/bundles/fedmem-s-1", ID: "fedmem-s-1", FDs: 4, Control: 7, PidFd: 8}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var got RunFlags
	got.Register(fs)
	if err := fs.Parse(want.Args()); err != nil {
		t.Fatalf("parse %q: %v", want.Args(), err)
	}
	if got != want {
		t.Fatalf("round trip: got %+v, want %+v (args %q)", got, want, want.Args())
	}
	fs = flag.NewFlagSet("run", flag.ContinueOnError)
	var def RunFlags
	def.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if def != (RunFlags{Control: -1, PidFd: -1}) {
		t.Fatalf("defaults: %+v, want no descriptors (-1)", def)
	}
	fs = flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	new(RunFlags).Register(fs)
	if err := fs.Parse([]string{"--fds", "x"}); err == nil {
		t.Fatal("--fds x parsed")
	}
}
