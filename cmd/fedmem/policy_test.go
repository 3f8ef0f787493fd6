package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestPolicyCheckJSON (issue 23): `fedmem policy check --json` prints one
// object a script can read, valid or not, with the exit code of the human
// form (0 valid, 1 invalid).
func TestPolicyCheckJSON(t *testing.T) {
	dir := testutil.TempDir(t)
	good := filepath.Join(dir, "good", "vault")
	if code, _, errOut := runFedmem("init", good); code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("reviewers: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		code  int
		valid bool
		err   string
	}{
		{args: []string{"policy", "check", "--json", "--vault", good}, code: 0, valid: true},
		{args: []string{"policy", "check", "--json", bad}, code: 1, valid: false, err: bad + ":1:"},
	} {
		code, out, errOut := runFedmem(tc.args...)
		var res policyCheckResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: not JSON (%v):\n%s", tc.args, err, out)
		}
		if code != tc.code || res.Valid != tc.valid || errOut != "" || res.Errors == nil || res.Warnings == nil {
			t.Errorf("%v: exit %d, %+v, stderr %q", tc.args, code, res, errOut)
		}
		if tc.err != "" && (len(res.Errors) == 0 || !strings.HasPrefix(res.Errors[0], tc.err)) {
			t.Errorf("%v: errors %q, want one starting %q", tc.args, res.Errors, tc.err)
		}
	}
}
