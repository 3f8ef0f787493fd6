package pin

import (
	"errors"
	"github.com/fedmem/fedmem/test/testutil"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// plan is a plan with a workdir w and a profile writable path p.
func plan(w, p string) *mounts.Plan {
	return &mounts.Plan{Workdir: w, Home: "/nonexistent-home", HomeAllowlist: true, Mounts: []mounts.Mount{
		{Kind: mounts.BindRW, Source: w, Target: w, Dir: true, Why: "workdir"},
		{Kind: mounts.BindRW, Source: p, Target: p, Dir: true, Why: "profile: writable"},
	}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantRule asserts err is a pin.Error that says what.
func wantRule(t *testing.T, err error, what string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "rule: "+Rule) || !strings.Contains(err.Error(), what) {
		t.Fatalf("got %v, want a %s refusal saying %q", err, Rule, what)
	}
}

func TestOpenPinnedSource(t *testing.T) {
	d := t.TempDir()
	w, p, real := filepath.Join(d, "work"), filepath.Join(d, "cache"), filepath.Join(d, "real-cache")
	must(t, os.Mkdir(w, 0o755))
	must(t, os.Mkdir(real, 0o755))
	// A profile's writable path may be a link the user made: resolved once.
	must(t, os.Symlink(real, p))
	pl := plan(w, p)
	must(t, Record(pl, nil))
	if got := pl.Sources[p].Path; got != real {
		t.Fatalf("pinned %s at %s, want the link's target %s", p, got, real)
	}
	for _, src := range []string{w, p} {
		fd, st, err := Open(pl, src)
		must(t, err)
		unix.Close(fd)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			t.Fatalf("%s: mode %#o", src, st.Mode)
		}
	}
	// Record again (after the launcher made state folders): unchanged.
	must(t, Record(pl, nil))
	must(t, CheckAll(pl))
}

func TestOpenRefusesSwappedSource(t *testing.T) {
	for _, c := range []struct {
		name, what string
		swap       func(t *testing.T, d, w string)
	}{
		{"leaf-link", "symbolic link", func(t *testing.T, d, w string) {
			must(t, os.Rename(w, w+".aside"))
			must(t, os.Symlink(filepath.Join(d, "etc"), w))
		}},
		{"parent-link", "symbolic link", func(t *testing.T, d, w string) {
			p := filepath.Dir(w)
			must(t, os.Rename(p, p+".aside"))
			must(t, os.Symlink(filepath.Join(d, "sys"), p))
		}},
		{"dir", "renamed into its place", func(t *testing.T, d, w string) {
			must(t, os.Rename(w, w+".aside"))
			must(t, os.Rename(filepath.Join(d, "sys", "etc"), w))
		}},
		{"gone", "gone", func(t *testing.T, d, w string) {
			must(t, os.Rename(w, w+".aside"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			w := filepath.Join(d, "p", "etc")
			must(t, os.MkdirAll(w, 0o755))
			must(t, os.MkdirAll(filepath.Join(d, "sys", "etc"), 0o755))
			pl := plan(w, filepath.Join(d, "absent"))
			must(t, Record(pl, nil))
			c.swap(t, d, w)
			_, _, err := Open(pl, w)
			wantRule(t, err, c.what)
			wantRule(t, CheckAll(pl), c.what)
			wantRule(t, Record(pl, nil), c.what)
		})
	}
}

// The workdir is resolved by the plan itself: a link on its way when it is
// pinned is a swap, not a path to resolve; and what was seen right after
// its resolution must still be there.
func TestRecordStrictWorkdir(t *testing.T) {
	d := t.TempDir()
	w := filepath.Join(d, "work")
	must(t, os.Mkdir(w, 0o755))
	seen, err := Identify(w)
	must(t, err)
	must(t, os.Rename(w, w+".aside"))
	must(t, os.Mkdir(w, 0o755))
	wantRule(t, Record(plan(w, filepath.Join(d, "absent")), map[string]mounts.Source{w: seen}), "renamed into its place")
	must(t, os.Remove(w))
	must(t, os.Symlink(w+".aside", w))
	wantRule(t, Record(plan(w, filepath.Join(d, "absent")), nil), "symbolic link")
}

// A source absent when the plan was pinned that appears before the bind
// is no folder the plan judged; absent still, it is the caller's ENOENT.
func TestOpenUnpinned(t *testing.T) {
	d := t.TempDir()
	w, p := filepath.Join(d, "work"), filepath.Join(d, "later")
	must(t, os.Mkdir(w, 0o755))
	pl := plan(w, p)
	must(t, Record(pl, nil))
	if _, _, err := Open(pl, p); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("absent source: %v, want ENOENT", err)
	}
	must(t, os.Mkdir(p, 0o755))
	_, _, err := Open(pl, p)
	wantRule(t, err, "appeared since")
	// A plan made by hand (nothing pinned): by its path, no link followed.
	pl.Sources = nil
	fd, _, err := Open(pl, p)
	must(t, err)
	unix.Close(fd)
	must(t, os.Remove(p))
	must(t, os.Symlink(w, p))
	_, _, err = Open(pl, p)
	wantRule(t, err, "symbolic link")
}

// TestCheckMounted: inside a runtime's root each pinned writable target
// must be the pinned folder and the root of a mount at that very path.
// A folder that is not a mount — the runtime bound elsewhere, a target
// swapped while it bound and swapped back — is refused, as is a mount of
// another folder.
func TestCheckMounted(t *testing.T) {
	testutil.RequireRoot(t)
	d := t.TempDir()
	w := filepath.Join(d, "work")
	must(t, os.Mkdir(w, 0o755))
	pl := plan(w, filepath.Join(d, "absent"))
	must(t, Record(pl, nil))
	wantRule(t, CheckMounted(pl), "not the root of a mount")
	must(t, unix.Mount(w, w, "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(w, unix.MNT_DETACH) })
	must(t, CheckMounted(pl))
	must(t, unix.Unmount(w, unix.MNT_DETACH))
	must(t, os.Rename(w, w+".aside"))
	must(t, os.Mkdir(w, 0o755))
	must(t, unix.Mount(w, w, "", unix.MS_BIND, ""))
	wantRule(t, CheckMounted(pl), "another file")
}
