package validate

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"

	"github.com/fedmem/fedmem/vault/note"
)

// secretDecodeDepth is how many decoding passes (base64, hex, percent) gitleaks
// runs over a draft; an agent that wraps a key in two layers is still caught.
const secretDecodeDepth = 4

var (
	detOnce sync.Once
	detMu   sync.Mutex
	det     *detect.Detector
	detErr  error
)

func detector() (*detect.Detector, error) {
	detOnce.Do(func() {
		// gitleaks logs through a package-global zerolog logger that can
		// print fragments of what it scans; the gate must never echo a
		// secret, so silence it.
		logging.Logger = logging.Logger.Level(zerolog.Disabled)
		d, err := detect.NewDetectorDefaultConfig()
		if err != nil {
			detErr = fmt.Errorf("gitleaks default config: %w", err)
			return
		}
		d.IgnoreGitleaksAllow = true
		d.MaxDecodeDepth = secretDecodeDepth
		d.Redact = 100
		det = d
	})
	return det, detErr
}

// allowMarker is stripped from the scanned copy as a second guard besides
// IgnoreGitleaksAllow: a draft does not get to exempt its own lines.
var allowMarker = []byte("gitleaks:allow")

// Secrets scans the draft bytes with gitleaks' default rules. It returns one
// Error finding per secret (rule id and line, never the secret). An error
// means the scanner could not run; the caller must then treat the draft as
// not scanned and must not promote it.
func Secrets(b []byte) ([]note.Finding, error) {
	d, err := detector()
	if err != nil {
		return nil, err
	}
	scan := bytes.ReplaceAll(b, allowMarker, []byte("gitleaks-allow"))
	detMu.Lock()
	found := d.Detect(detect.Fragment{Raw: string(scan)})
	detMu.Unlock()
	var out []note.Finding
	lim := limiter{}
	for _, f := range found {
		out = lim.add(out, note.Finding{Rule: "secret", Line: f.StartLine + 1, Severity: note.Error,
			Message: fmt.Sprintf("looks like a secret (gitleaks rule %s); remove it, secrets never enter the vault", f.RuleID)})
	}
	return out, nil
}
