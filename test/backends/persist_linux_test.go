package backends

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// persistProbe, in a Git workdir: what git status shows before any work,
// whether the user's .npmrc can be changed, the agent's commit of
// everything (git add -A), then two persistence plants left for the user
// (a lefthook local override at the top, an .npmrc in a subdirectory).
const persistProbe = `
echo "status=$(git status --porcelain --untracked-files=all | tr '\n' ' ')"
if out=$( (echo 'node-options=--require /tmp/pwned.js' >> .npmrc) 2>&1 ); then echo npmrc=ok; else echo "npmrc=${out##*: }"; fi
echo work >> work.txt
git add -A && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m agent
echo "commit=$(git show --name-only --format= HEAD | tr '\n' ' ')"
printf 'pre-commit:\n  commands:\n    x:\n      run: touch /tmp/pwned\n' > lefthook-local.yml
mkdir -p sub && echo 'script-shell=/tmp/pwned' > sub/.npmrc
echo planted=ok
`

// TestBackendsPersistenceFamilies: under each backend, in a Git workdir,
// git status inside lists nothing of fedmem's (no placeholder outside
// .git), the agent's `git add -A && git commit` holds only its work, the
// user's .npmrc (a persistence family name present at the top) is
// read-only, and the lefthook-local.yml and sub/.npmrc the agent planted are
// moved aside after the session; the host's git status then shows only
// the moved-aside names.
func TestBackendsPersistenceFamilies(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := prepare(t, b)
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-C", s.workdir, "-c", "user.name=user", "-c", "user.email=user@example.invalid"}, args...)...)
				cmd.Env = append(os.Environ(), "HOME="+s.home)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			git("init", "-q")
			for name, body := range map[string]string{"work.txt": "start\n", ".npmrc": "registry=https://registry.npmjs.org/\n"} {
				if err := os.WriteFile(filepath.Join(s.workdir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			git("add", "-A")
			git("commit", "-q", "-m", "start")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := s.command(ctx, "/bin/sh", "-c", persistProbe)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			if code := exitCode(cmd.Run()); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, so.String(), se.String())
			}
			got := map[string]string{}
			sc := bufio.NewScanner(&so)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					got[k] = strings.TrimSpace(v)
				}
			}
			want := map[string]string{"status": "", "npmrc": "Read-only file system", "commit": "work.txt", "planted": "ok"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q\nstderr:\n%s", k, got[k], v, se.String())
				}
			}
			for _, rel := range []string{"lefthook-local.yml", "sub/.npmrc"} {
				if _, err := os.Lstat(filepath.Join(s.workdir, rel)); err == nil {
					t.Errorf("BREACH %s, planted by the agent, is still there for the user's tools", rel)
				}
			}
			for _, l := range strings.Split(strings.TrimSpace(git("status", "--porcelain", "--untracked-files=all")), "\n") {
				if l != "" && !strings.Contains(l, ".fedmem-quarantined-") {
					t.Errorf("host git status after the session: %q, want only moved-aside names", l)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(s.workdir, ".npmrc")); string(b) != "registry=https://registry.npmjs.org/\n" {
				t.Errorf("BREACH the user's .npmrc changed: %q", b)
			}
		})
	}
}
