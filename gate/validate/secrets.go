package validate

import (
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/fedmem/fedmem/vault/note"
)

// secretDecodeDepth is how many decoding passes (base64, hex, percent) gitleaks
// runs over a draft; an agent that wraps a key in two layers is still caught.
const secretDecodeDepth = 4

var (
	detMu    sync.Mutex
	det      *detect.Detector
	detErr   error
	detFound int // findings det has kept
)

// detRenew bounds what one detector keeps: gitleaks appends every finding
// to the detector's own list and never drops one, and the gate scans
// hostile drafts for as long as it runs. Past this many, the next scan
// makes a new detector (scans in flight finish on the old one).
const detRenew = 4096

// newDetector is gitleaks with its default rules as the gate uses them.
func newDetector() (*detect.Detector, error) {
	// gitleaks logs through a package-global zerolog logger that can
	// print fragments of what it scans; the gate must never echo a
	// secret, so silence it.
	logging.Logger = logging.Logger.Level(zerolog.Disabled)
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("gitleaks default config: %w", err)
	}
	d.IgnoreGitleaksAllow = true
	d.MaxDecodeDepth = secretDecodeDepth
	d.Redact = 100
	return d, nil
}

// detectSecrets runs gitleaks over scan. Scans run in parallel, not one
// at a time (the gate validates drafts ahead on every core): a gitleaks
// Detector is made for concurrent scans — its rules, keyword trie and
// regexps are only read, its byte counter is atomic and its findings list
// has its own mutex (gitleaks scans files and commits in parallel with one).
func detectSecrets(scan string) ([]report.Finding, error) {
	detMu.Lock()
	if det == nil && detErr == nil || detFound > detRenew {
		det, detErr = newDetector()
		detFound = 0
	}
	d, err := det, detErr
	detMu.Unlock()
	if err != nil {
		return nil, err
	}
	found := d.Detect(detect.Fragment{Raw: scan})
	if len(found) > 0 {
		detMu.Lock()
		detFound += len(found)
		detMu.Unlock()
	}
	return found, nil
}

// allowMarker is stripped from the scanned copy as a second guard besides
// IgnoreGitleaksAllow: a draft does not get to exempt its own lines.
var allowMarker = []byte("gitleaks:allow")

// Secrets scans the draft bytes with gitleaks' default rules. It returns one
// Error finding per secret (rule id and line, never the secret). An error
// means the scanner could not run; the caller must then treat the draft as
// not scanned and must not promote it.
func Secrets(b []byte) ([]note.Finding, error) {
	return secretScan(nil, newLimiter(), string(b), nil, "secret", "")
}

// secretScan runs gitleaks over text. lineOf maps a 0-based line of text
// to a draft line (nil: line i is draft line i+1). where says what was
// scanned, for the message ("" for the draft itself).
func secretScan(out []note.Finding, lim *limiter, text string, lineOf func(int) int, rule, where string) ([]note.Finding, error) {
	scan := strings.ReplaceAll(text, string(allowMarker), "gitleaks-allow")
	found, err := detectSecrets(scan)
	if err != nil {
		return out, err
	}
	for _, f := range found {
		line := f.StartLine + 1
		if lineOf != nil {
			line = lineOf(f.StartLine)
		}
		out = lim.add(out, note.Finding{Rule: rule, Line: line, Severity: note.Error,
			Message: fmt.Sprintf("looks like a secret%s (gitleaks rule %s); remove it, secrets never enter the vault", where, f.RuleID)})
	}
	return out, nil
}

// Name scans a draft's file name (as the agent wrote it) for secrets: the
// name reaches receipts, the audit log and possibly a path or commit
// message.
func Name(name string) ([]note.Finding, error) {
	return secretScan(nil, newLimiter(), name, func(int) int { return 0 }, "secret-name", " in the draft's file name")
}
