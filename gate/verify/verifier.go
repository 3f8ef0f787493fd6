package verify

// Approved verification processes. The gate never runs a verifier itself:
// it executes the fedmem-run binary (the gate does not link the sandbox;
// test/boundary enforces it) with the profile the policy names, so the
// verifier sees the vault read-only, its own inbox as the only writable vault
// path, and whatever else that profile allows — and nothing of the gate's
// state. Without fedmem-run there is no verification: the draft is held.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
)

// Environment the gate reads to find its helpers (the gate's own
// environment is trusted; agents never set it).
const (
	// FedmemRunEnv is the absolute path of fedmem-run; without it the gate
	// uses fedmem-run next to its own executable.
	FedmemRunEnv = "FEDMEM_RUN"
	// VerifyTmpEnv is where a verifier's input folder is made (default
	// /var/tmp). It must not be /tmp: sandboxes get a private /tmp.
	VerifyTmpEnv = "FEDMEM_VERIFY_TMP"
)

// Files a verifier finds in its working directory (also $PWD), read-only:
// the draft exactly as claimed, and the sources as the gate resolved them
// (JSON: [{resource, fingerprint, url, line}], vault paths relative to
// $FEDMEM_VAULT). The draft's path is also the command's last argument.
const (
	VerifyDraftFile   = "draft.md"
	VerifySourcesFile = "sources.json"
)

// maxVerifierOutput is how much of a verifier's output is kept for the
// receipt (all of it is hashed).
const maxVerifierOutput = 2048

// verifierRunner runs policy verifiers under fedmem-run.
// Runner runs approved verifiers through fedmem-run.
type Runner struct {
	fedmemRun string // "" when not found: every run fails with findErr
	findErr   error
	vault     string
	tmpBase   string
}

// newVerifierRunner locates fedmem-run: $FEDMEM_RUN, else next to the
// running executable.
func NewRunner(vaultDir string) *Runner {
	r := &Runner{vault: vaultDir, tmpBase: os.Getenv(VerifyTmpEnv)}
	if r.tmpBase == "" {
		r.tmpBase = "/var/tmp"
	}
	r.fedmemRun, r.findErr = findFedmemRun()
	return r
}

// FindErr is why fedmem-run was not found (nil: found); every run then
// fails with it.
func (r *Runner) FindErr() error { return r.findErr }

func findFedmemRun() (string, error) {
	p := os.Getenv(FedmemRunEnv)
	if p != "" && !filepath.IsAbs(p) {
		return "", fmt.Errorf("$%s=%q is not an absolute path", FedmemRunEnv, p)
	}
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot find fedmem-run (set $%s): %w", FedmemRunEnv, err)
		}
		p = filepath.Join(filepath.Dir(exe), "fedmem-run")
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("fedmem-run not found at %s (set $%s to its absolute path): %w", p, FedmemRunEnv, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("fedmem-run at %s is not an executable file", p)
	}
	return p, nil
}

// outputSink hashes everything written to it and keeps the start.
type outputSink struct {
	mu   sync.Mutex
	h    hash.Hash
	keep []byte
	n    int64
}

func (o *outputSink) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.h.Write(b)
	o.n += int64(len(b))
	if room := maxVerifierOutput - len(o.keep); room > 0 {
		o.keep = append(o.keep, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// printable makes verifier output safe for a receipt and a terminal:
// control characters (but newline and tab) become '?', a cut rune is dropped.
func printable(b []byte, total int64) string {
	for len(b) > 0 && !utf8.Valid(b) {
		r, _ := utf8.DecodeLastRune(b)
		if r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1]
	}
	s := strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, string(b))
	if total > int64(len(b)) {
		s += fmt.Sprintf("… (%d bytes in all)", total)
	}
	return s
}

// runReport is the part of fedmem-run's session report the gate reads.
type runReport struct {
	Session   string   `json:"session"`
	ExitCode  int      `json:"exit_code"`
	LimitsHit []string `json:"limits_hit"`
}

// Run executes one verifier on a draft and says what happened. It never
// returns without the process (and its sandbox) gone.
func (r *Runner) Run(ctx context.Context, v policy.Verifier, draft []byte, sources []decide.SourceProof) (out decide.VerifierRun) {
	out = decide.VerifierRun{Name: v.Name, Profile: v.Profile, ExitCode: -1}
	sink := &outputSink{h: sha256.New()}
	defer func() {
		out.OutputSHA256 = hex.EncodeToString(sink.h.Sum(nil))
		out.Output = printable(sink.keep, sink.n)
	}()
	if r.findErr != nil {
		out.Error = r.findErr.Error()
		return out
	}
	work, err := os.MkdirTemp(r.tmpBase, "fedmem-verify-")
	if err != nil {
		out.Error = fmt.Sprintf("verifier input folder: %v", err)
		return out
	}
	defer os.RemoveAll(work)
	private, err := os.MkdirTemp("", "fedmem-verify-report-")
	if err != nil {
		out.Error = fmt.Sprintf("verifier report folder: %v", err)
		return out
	}
	defer os.RemoveAll(private)
	srcJSON, _ := json.MarshalIndent(sources, "", "  ")
	for _, f := range []struct {
		name string
		b    []byte
	}{{VerifyDraftFile, draft}, {VerifySourcesFile, append(srcJSON, '\n')}} {
		if err := os.WriteFile(filepath.Join(work, f.name), f.b, 0o444); err != nil {
			out.Error = fmt.Sprintf("verifier input: %v", err)
			return out
		}
	}
	// 0711: the sandbox's uid may enter and read the files it is told
	// about; nobody can list the folder, nor write it (unless the gate's
	// own uid runs the verifier, which then only changes its own input:
	// the gate keeps its copy of the draft).
	if err := os.Chmod(work, 0o711); err != nil {
		out.Error = fmt.Sprintf("verifier input: %v", err)
		return out
	}
	report := filepath.Join(private, "report.json")
	// The verifier's profile as the policy names it, with the workdir
	// direct: the workdir is the gate's own throwaway folder, removed
	// after the run, so a proposal of the verifier's writes (strict's
	// workdir: propose) would only pile up in the gate user's state.
	prof := filepath.Join(private, "verifier-profile.yaml")
	profYAML := fmt.Sprintf("name: fedmem-verifier\nextends: %q\ndescription: the policy verifier's profile (%s), its workdir the gate's throwaway folder\nworkdir: direct\n", v.Profile, v.Profile)
	if err := os.WriteFile(prof, []byte(profYAML), 0o644); err != nil {
		out.Error = fmt.Sprintf("verifier profile: %v", err)
		return out
	}
	args := []string{"--vault", r.vault, "--profile", prof, "--workdir", work,
		"--timeout", v.Timeout.String(), "--report", report, "--"}
	args = append(append(args, v.Command...), filepath.Join(work, VerifyDraftFile))
	// Backstop: fedmem-run ends the sandbox at --timeout; if fedmem-run
	// itself does not return well after that, its process group is killed.
	bctx, cancel := context.WithTimeout(ctx, v.Timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(bctx, r.fedmemRun, args...)
	cmd.Dir = work
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = sink, sink
	cmd.WaitDelay = 5 * time.Second
	killGroupOnCancel(cmd)
	err = cmd.Run()
	var rep runReport
	if b, rerr := os.ReadFile(report); rerr == nil {
		_ = json.Unmarshal(b, &rep)
	}
	r.DropSession(rep.Session)
	var ee *exec.ExitError
	switch {
	case err == nil:
		out.ExitCode = 0
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
	default:
		out.Error = fmt.Sprintf("run fedmem-run: %v", err)
	}
	out.TimedOut = bctx.Err() != nil || slices.Contains(rep.LimitsHit, "wall_time")
	out.Passed = out.ExitCode == 0 && !out.TimedOut && out.Error == ""
	return out
}

// dropSession removes the inbox folder and record fedmem-run made for a
// verifier's session: a verifier is a check, not an author, so nothing it
// leaves there may ever be claimed as a draft. The session is the gate's
// when its record is (the gate started fedmem-run, which writes the record
// as its caller): the folder itself may belong to the agent's uid instead
// (a root gate's verifier runs as an unprivileged host uid, issue 8), so
// either owner is enough. os.RemoveAll removes links without following
// them; the record goes last, once the folder is gone.
func (r *Runner) DropSession(session string) {
	if !vault.ValidSessionID(session) {
		return
	}
	inbox := filepath.Join(r.vault, vault.InboxDir)
	rec := filepath.Join(inbox, ".sessions", session+".json")
	rfi, err := os.Lstat(rec)
	mine := err == nil && rfi.Mode().IsRegular() && ownedByMe(rfi)
	if fi, err := os.Lstat(filepath.Join(inbox, session)); err == nil && fi.IsDir() && (mine || ownedByMe(fi)) {
		if os.RemoveAll(filepath.Join(inbox, session)) != nil {
			return // keep the record: it says whose the folder is
		}
	}
	if mine {
		os.Remove(rec)
	}
}
