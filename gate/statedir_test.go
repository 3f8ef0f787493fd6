package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// openErr opens a gate on v with the given state dir and returns the error.
func openErr(t *testing.T, v, state string) error {
	t.Helper()
	g, err := Open(Options{Vault: v, StateDir: state, AllowSameUser: true})
	if err == nil {
		g.Close()
	}
	return err
}

func wantUntrusted(t *testing.T, err error, path, rule string) {
	t.Helper()
	if !errors.Is(err, ErrUntrustedStateDir) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), rule) {
		t.Fatalf("Open = %v; want ErrUntrustedStateDir naming %s and %q", err, path, rule)
	}
}

// Issue 8: the gate adopted a state directory it had not created. Each
// planted shape is refused with the path and the rule.
func TestStateDirRefusesPlanted(t *testing.T) {
	v := newVault(t)
	base := filepath.Dir(v)

	// A symbolic link as the state directory (to a dir the planter reads).
	elsewhere := t.TempDir()
	link := filepath.Join(base, "state-link")
	os.Symlink(elsewhere, link)
	wantUntrusted(t, openErr(t, v, link), link, "symbolic link")
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("the gate wrote through the link: %v", ents)
	}

	// A file.
	file := filepath.Join(base, "state-file")
	os.WriteFile(file, nil, 0o600)
	wantUntrusted(t, openErr(t, v, file), file, "not a directory")

	// Group- or world-writable.
	open := filepath.Join(base, "state-open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	wantUntrusted(t, openErr(t, v, open), open, "rule: mode")

	// A sub-folder that is a link.
	sub := filepath.Join(base, "state-sub")
	os.Mkdir(sub, 0o700)
	os.Symlink(elsewhere, filepath.Join(sub, claimsDir))
	wantUntrusted(t, openErr(t, v, sub), filepath.Join(sub, claimsDir), "no links")

	// Absent, under a parent others may write: not created.
	shared := filepath.Join(base, "shared")
	os.Mkdir(shared, 0o700)
	os.Chmod(shared, 0o777)
	absent := filepath.Join(shared, "state")
	wantUntrusted(t, openErr(t, v, absent), absent, "trusted parent")
	if _, err := os.Lstat(absent); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state dir created under an untrusted parent: %v", err)
	}

	// Absent under a trusted parent: created, 0711, sub-folders 0700.
	fresh := filepath.Join(base, "fresh")
	if err := openErr(t, v, fresh); err != nil {
		t.Fatalf("fresh state dir under a trusted parent: %v", err)
	}
	if fi, err := os.Lstat(fresh); err != nil || fi.Mode().Perm() != 0o711 {
		t.Fatalf("fresh state dir: %v %v", fi.Mode(), err)
	}
}

// A link planted where the audit log goes (by whoever could write the state
// dir before it was fixed): the gate refuses to open it, and the link's
// target is untouched.
func TestAuditNeverAppendsThroughPlantedLink(t *testing.T) {
	v := newVault(t)
	state := DefaultStateDir(v)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)
	if err := os.Symlink(victim, filepath.Join(state, "audit.jsonl")); err != nil {
		t.Fatal(err)
	}
	err := openErr(t, v, "")
	if err == nil || !strings.Contains(err.Error(), "audit.jsonl") || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Open with a planted audit link = %v; want a refusal naming audit.jsonl and the link", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the gate appended through the link: %q", b)
	}
}

// Root: a user of the agents' group plants the state directory (and an
// audit link inside it) where `fedmem init` had not made one; the gate
// (here root, owner of the vault) refuses it.
func TestStateDirPlantedByAgentUser(t *testing.T) {
	testutil.RequireRoot(t)
	base := testutil.TempDir(t)
	os.Chmod(base, 0o777) // the vault's parent: agents may create entries there
	v := filepath.Join(base, "vault")
	if _, err := vaultInit(v); err != nil {
		t.Fatal(err)
	}
	state := DefaultStateDir(v)
	os.RemoveAll(state) // as if `fedmem init` had not run here
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o644)
	plant := asUser(agentUID, agentUID, "/bin/sh", "-c", `mkdir -m 0700 "$1" && ln -s "$2" "$1/audit.jsonl"`, "sh", state, victim)
	if out, err := plant.CombinedOutput(); err != nil {
		t.Fatalf("plant: %v %s", err, out)
	}
	wantUntrusted(t, openErr(t, v, ""), state, "owned by uid 64001")
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("victim changed: %q", b)
	}
	// Removed, the parent is still writable by others: not re-created.
	os.RemoveAll(state)
	wantUntrusted(t, openErr(t, v, ""), state, "trusted parent")
	// A root-owned dir the planter made group-writable for the agents.
	os.Mkdir(state, 0o700)
	os.Chmod(state, 0o770)
	os.Chown(state, 0, agentUID)
	wantUntrusted(t, openErr(t, v, ""), state, "rule: mode")
}
