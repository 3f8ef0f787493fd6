package profiles

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrorsNameWhatWasMeant (issue 23): a missing profile FILE is
// named in the error ("profile: no such file or directory" named none),
// and a mistyped built-in name says which one was meant.
func TestLoadErrorsNameWhatWasMeant(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, _, _, err := LoadCheckedFrom(missing, nil)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v; want it named, and why", err)
	}
	_, _, _, err = LoadCheckedFrom("claud", nil)
	if err == nil || !strings.Contains(err.Error(), `unknown profile "claud" (did you mean "claude"?)`) {
		t.Errorf("typo: %v; want a did-you-mean", err)
	}
}
