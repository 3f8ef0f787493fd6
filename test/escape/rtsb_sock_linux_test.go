package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShownHomeLinkToSocketDir: a home.show entry that is a link (a
// dotfiles-style ~/.config/rtapp -> elsewhere) is bound from its target;
// an unlisted socket in that target, or a shown entry that is a link to a
// socket itself, must not answer (the start-time scan must see the target).
func TestShownHomeLinkToSocketDir(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	dots := filepath.Join(e.base, "dots")
	must(t, os.MkdirAll(filepath.Join(dots, "rtapp"), 0o755))
	sockInDir := filepath.Join(dots, "rtapp", "app.sock")
	sockFile := filepath.Join(dots, "single.sock")
	serveSocket(t, sockInDir, 0, 0, 0o666)
	serveSocket(t, sockFile, 0, 0, 0o666)
	must(t, os.MkdirAll(filepath.Join(e.home, ".config"), 0o755))
	must(t, os.Symlink(filepath.Join(dots, "rtapp"), filepath.Join(e.home, ".config", "rtapp")))
	must(t, os.Symlink(sockFile, filepath.Join(e.home, ".rtsock")))
	prof := filepath.Join(e.outDir, "show.yaml")
	must(t, os.WriteFile(prof, []byte("name: show\nextends: default\nhome:\n  show: [.config/rtapp/, .rtsock]\n"), 0o644))
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", socketProbe,
		"DIR_SOCKET="+filepath.Join(e.home, ".config", "rtapp", "app.sock"), "FILE_SOCKET="+filepath.Join(e.home, ".rtsock"))
	t.Logf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	out := string(r.stdout)
	if !strings.Contains(out, "END") {
		t.Fatalf("the probe did not run (exit %d)", r.code)
	}
	for _, n := range []string{"DIR_SOCKET", "FILE_SOCKET"} {
		if strings.Contains(out, n+" HOST-SOCKET") {
			t.Errorf("%s: an unlisted socket behind a shown home link answered", n)
		}
	}
}
