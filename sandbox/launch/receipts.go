package launch

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/vault"
)

// vaultReadsOf makes the report's receipt from what the backend recorded,
// with blob ids at commit (the vault's HEAD when the session started).
func vaultReadsOf(vr *sandbox.VaultReads, vaultDir, commit, end string) (*vault.ReadReceipt, []string) {
	if vr == nil {
		return nil, nil
	}
	if vr.Unavailable != "" {
		return &vault.ReadReceipt{Unavailable: vr.Unavailable, Reads: []vault.VaultRead{}},
			[]string{"vault_reads: no read receipt for this session (which vault files the agent opened is not recorded): " + vr.Unavailable}
	}
	out := &vault.ReadReceipt{Recorded: true, Attribution: vr.Attribution, Commit: commit, Count: len(vr.Reads), GitOpens: vr.GitOpens,
		Unattributed: vr.Unattributed, Lost: vr.Lost, Reads: []vault.VaultRead{}}
	paths := make([]string, len(vr.Reads))
	named := make([]string, len(vr.Reads)) // as the record and the digest hold them
	for i, r := range vr.Reads {
		paths[i], named[i] = r.Path, vault.ReadPath(r.Path)
	}
	// At most MaxVaultReads entries and MaxVaultReadBytes of paths: the
	// record must stay well under the 1 MiB the gate reads of it.
	listed, size := vr.Reads, 0
	for i, r := range listed {
		if size += len(r.Path); i == vault.MaxVaultReads || size > vault.MaxVaultReadBytes {
			listed, out.Truncated = listed[:i], true
			break
		}
	}
	// Blob ids of the listed reads only: the digest binds the rest
	// through the commit. Git looks them up while the digest sorts every
	// path (100k after a grep of the vault).
	type found struct {
		ids map[string]string
		err error
	}
	lookup := make(chan found, 1)
	go func() {
		ids, err := blobIDs(vaultDir, commit, paths[:len(listed)])
		lookup <- found{ids, err}
	}()
	out.Digest = vault.ReadsDigest(commit, named)
	f := <-lookup
	blobs, err := f.ids, f.err
	var warnings []string
	if err != nil {
		warnings = append(warnings, "vault_reads: blob ids not read: "+err.Error())
	}
	out.Reads = make([]vault.VaultRead, len(listed))
	for i, r := range listed {
		out.Reads[i] = vault.VaultRead{Path: named[i], Blob: blobs[r.Path], First: r.First.Format(time.RFC3339Nano)}
	}
	if end != "" && end != commit && err == nil {
		warnings = append(warnings, changedDuring(out, vaultDir, end, paths[:len(listed)])...)
	}
	if vr.Attribution == sandbox.AttributionAnyProcess {
		warnings = append(warnings, "vault_reads: recorded with inode marks (an unprivileged caller, or the overlay of vault.view: in-force): every open of a vault file on this host while the session ran is listed, the agent's and any other process's (attribution: any-process)")
	}
	if vr.Lost {
		warnings = append(warnings, "vault_reads: the kernel's event queue overflowed: some of the agent's vault reads are not in the receipt")
	}
	if vr.Unattributed > 0 {
		warnings = append(warnings, fmt.Sprintf("vault_reads: %d opens in the vault could not be named", vr.Unattributed))
	}
	return out, warnings
}

// changedDuring marks the reads of out whose file differs at end (the
// vault's HEAD when the session ended) from its blob at out.Commit.
func changedDuring(out *vault.ReadReceipt, vaultDir, end string, paths []string) []string {
	at, err := blobIDs(vaultDir, end, paths)
	if err != nil {
		return []string{"vault_reads: blob ids at the session's end not read: " + err.Error()}
	}
	for i := range out.Reads {
		r := &out.Reads[i]
		if b := at[r.Path]; b != r.Blob {
			r.EndBlob, r.Removed = b, b == ""
			out.ChangedDuring++
		}
	}
	if out.ChangedDuring == 0 {
		return nil
	}
	return []string{fmt.Sprintf("vault_reads: the gate changed %d of the notes the agent read while it ran (end_blob, removed_by_end): it may have read either version", out.ChangedDuring)}
}

// blobIDs are the blob ids of paths at commit, from `git ls-tree` (the
// launcher does not link a Git library). Git is asked for the folders
// the paths lie in ("dir/", as literal pathspecs: each folder's entries)
// and the root's paths by name, not for each path: ls-tree matches every
// entry it walks against every pathspec, and a grep's 2000 listed reads
// lie in a few folders (9 ms against 48 ms on the 100k-note vault).
func blobIDs(vaultDir, commit string, paths []string) (map[string]string, error) {
	ids := map[string]string{}
	if commit == "" || len(paths) == 0 {
		return ids, nil
	}
	want, asked := make(map[string]bool, len(paths)), map[string]bool{}
	args := []string{"--literal-pathspecs", "-c", "safe.directory=*", "-C", vaultDir, "ls-tree", "-z", "--full-tree", commit, "--"}
	for _, p := range paths {
		want[p] = true
		spec := p // a file at the root: by name
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			spec = p[:i+1] // its folder's entries
		}
		if !asked[spec] {
			asked[spec] = true
			args = append(args, spec)
		}
	}
	cmd := exec.Command("git", args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/local/bin", "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return ids, fmt.Errorf("git ls-tree: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "<mode> SP <type> SP <object> TAB <path>"
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if ok && len(f) == 3 && f[1] == "blob" && want[string(p)] {
			ids[string(p)] = f[2]
		}
	}
	return ids, nil
}
