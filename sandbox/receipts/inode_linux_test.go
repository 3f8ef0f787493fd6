package receipts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInodeMarksSeeEveryOpen runs the unprivileged caller's recorder
// (inode marks on every folder) on a real vault tree: a child's open that
// exits at once, a file in a nested folder, a folder made while the
// recorder runs (its file already there when it is marked, and one opened
// after) are all named; a file nobody opened is not, nor the recorder's
// own listing of the folders.
func TestInodeMarksSeeEveryOpen(t *testing.T) {
	v := t.TempDir()
	for _, f := range []string{"top.md", "10-projects/a.md", "10-projects/deep/b.md", "10-projects/unread.md"} {
		p := filepath.Join(v, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opath, err := unix.Open(v, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(opath)
	r := &Recorder{vault: v}
	if err := unix.Pipe2(r.stop[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	w, why := r.markInodes([]string{v}, []int{opath})
	if w == nil {
		t.Fatalf("markInodes: %s", why)
	}
	defer w.close()
	done := make(chan *VaultReads, 1)
	go func() { done <- r.read(w.fan, w) }()
	for _, f := range []string{"top.md", "10-projects/deep/b.md"} {
		if out, err := exec.Command("cat", filepath.Join(v, f)).CombinedOutput(); err != nil {
			t.Fatalf("cat %s: %v %s", f, err, out)
		}
	}
	if _, err := os.ReadFile(filepath.Join(v, "10-projects/a.md")); err != nil {
		t.Fatal(err)
	}
	nd := filepath.Join(v, "20-new", "sub")
	if err := os.MkdirAll(nd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nd, "c.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cat", filepath.Join(nd, "c.md")).CombinedOutput(); err != nil {
		t.Fatalf("cat: %v %s", err, out)
	}
	unix.Close(r.stop[1])
	vr := <-done
	unix.Close(r.stop[0])
	var got []string
	for _, x := range vr.Reads {
		got = append(got, x.Path)
	}
	sort.Strings(got)
	// This test's own process opened 10-projects/a.md and wrote c.md:
	// its pid is the recorder's, so those are dropped as the recorder's
	// own (the host's other processes carry no pid for an unprivileged
	// group; a root group's carry theirs, and only this one is dropped).
	want := "10-projects/deep/b.md 20-new/sub/c.md top.md"
	if strings.Join(got, " ") != want || vr.Attribution != AnyProcess || vr.Unattributed != 0 || vr.Lost {
		t.Errorf("reads %v (want %s), attribution %q, unattributed %d, lost %v", got, want, vr.Attribution, vr.Unattributed, vr.Lost)
	}
}

// BenchmarkInodeMarks is the unprivileged recorder's cost on a tree laid
// out like make bench's large vault (100k notes, 100 a folder, in five
// top folders): marking every folder before the agent starts, and a
// `grep -r` over the tree with the recorder reading (on) and without any
// marks (off).
func BenchmarkInodeMarks(b *testing.B) {
	v := b.TempDir()
	folders := []string{"10-projects", "20-domains", "30-clients", "40-workflows", "70-decisions"}
	for i := 0; i < 100000; i++ {
		d := filepath.Join(v, folders[i%len(folders)], fmt.Sprintf("d%04d", i/100/len(folders)))
		if i%(100*len(folders)) < len(folders) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("n%06d.md", i)), []byte("---\ntype: note\n---\nbody\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	opath, err := unix.Open(v, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(opath)
	grep := func(b *testing.B) {
		if err := exec.Command("grep", "-rq", "no-such-text", v).Run(); err != nil && err.(*exec.ExitError).ExitCode() != 1 {
			b.Fatal(err)
		}
	}
	b.Run("mark", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r := &Recorder{vault: v}
			w, why := r.markInodes([]string{v}, []int{opath})
			if w == nil {
				b.Fatal(why)
			}
			b.ReportMetric(float64(w.marks), "marks")
			w.close()
		}
	})
	b.Run("grep-off", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			grep(b)
		}
	})
	b.Run("grep-on", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			r := &Recorder{vault: v}
			if err := unix.Pipe2(r.stop[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
				b.Fatal(err)
			}
			w, why := r.markInodes([]string{v}, []int{opath})
			if w == nil {
				b.Fatal(why)
			}
			done := make(chan *VaultReads, 1)
			go func() { done <- r.read(w.fan, w) }()
			b.StartTimer()
			grep(b)
			unix.Close(r.stop[1])
			vr := <-done
			b.StopTimer()
			unix.Close(r.stop[0])
			w.close()
			if len(vr.Reads) != 100000 || vr.Lost {
				b.Fatalf("%d reads, lost %v: want all 100000", len(vr.Reads), vr.Lost)
			}
			b.StartTimer()
		}
	})
}
