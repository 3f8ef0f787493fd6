package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolationReader runs inside the sandbox as a hostile reader: it lists
// what it can of the vault and tries to open notes of folders the profile
// does not show, by their paths and through /proc.
const isolationReader = `
import os, sys
v = os.environ["FEDMEM_VAULT"]
def ls(p):
    try: return ",".join(sorted(os.listdir(p)))
    except OSError as e: return "ERR " + e.strerror
def cat(p):
    try: return "READ " + open(p).read().strip()
    except OSError as e: return "ERR " + e.strerror
print("ROOT", ls(v))
print("CLIENTS", ls(v + "/30-clients"))
print("ACME", cat(v + "/30-clients/acme/note.md"))
print("GLOBEX", cat(v + "/30-clients/globex/note.md"))
print("GLOBEXPROC", cat("/proc/1/root" + v + "/30-clients/globex/note.md"))
print("PAYMENTS", cat(v + "/20-domains/payments/note.md"))
print("GIT", ls(v + "/.git"))
print("GLOBAL", cat(v + "/00-global/AGENT.md")[:4])
try:
    open(os.environ["FEDMEM_INBOX"] + "/d.md", "w").write("x")
    print("INBOX OK")
except OSError as e:
    print("INBOX ERR " + e.strerror)
`

// TestVaultVisibility: a profile that shows only some vault folders makes
// every other folder — another client's notes, .git — not exist inside the
// sandbox, in the layouts where the vault is beside and inside the workdir.
func TestVaultVisibility(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "inside/root", vaultInWorkdir: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			for rel, body := range map[string]string{
				"30-clients/acme/note.md":     "ACME-NOTE",
				"30-clients/globex/note.md":   "GLOBEX-SECRET",
				"20-domains/payments/note.md": "PAYMENTS-SECRET",
			} {
				p := filepath.Join(e.vault.Dir, rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			prof := filepath.Join(e.outDir, "iso.yaml")
			os.WriteFile(prof, []byte("name: iso\nextends: default\nvault:\n  visible: [00-global, 30-clients/acme]\n"), 0o644)
			r := e.run(t, []string{"--profile", prof}, "python3", "-c", isolationReader)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			out := map[string]string{}
			for _, line := range strings.Split(string(r.stdout), "\n") {
				k, v, _ := strings.Cut(line, " ")
				out[k] = v
			}
			t.Logf("reader saw:\n%s", r.stdout)
			want := map[string]string{
				"ROOT":     "00-global,30-clients,90-inbox",
				"CLIENTS":  "acme",
				"ACME":     "READ ACME-NOTE",
				"GLOBEX":   "ERR No such file or directory",
				"PAYMENTS": "ERR No such file or directory",
				"GIT":      "ERR No such file or directory",
				"GLOBAL":   "READ",
				"INBOX":    "OK",
			}
			for k, w := range want {
				if out[k] != w {
					t.Errorf("%s: %q, want %q", k, out[k], w)
				}
			}
			if !strings.HasPrefix(out["GLOBEXPROC"], "ERR") {
				t.Errorf("GLOBEXPROC: %q, want an error", out["GLOBEXPROC"])
			}
			if strings.Contains(string(r.stdout), "GLOBEX-SECRET") || strings.Contains(string(r.stdout), "PAYMENTS-SECRET") {
				t.Fatal("a hidden note was read")
			}
		})
	}
}
