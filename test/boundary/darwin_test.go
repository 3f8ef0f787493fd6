package boundary

import (
	"os"
	"os/exec"
	"testing"
)

// TestAdminCLIBuildsOnDarwin: reviewers use Macs; `fedmem` (admin and
// review commands) must cross-compile for darwin. Linux-only code stays
// behind build tags (mounts' mountinfo parser, the gate's file claims).
func TestAdminCLIBuildsOnDarwin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cross-compiles cmd/fedmem")
	}
	for _, arch := range []string{"arm64"} {
		cmd := exec.Command("go", "build", "-o", os.DevNull, "github.com/fedmem/fedmem/cmd/fedmem")
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GOOS=darwin GOARCH=%s go build ./cmd/fedmem: %v\n%s", arch, err, out)
		}
	}
}
