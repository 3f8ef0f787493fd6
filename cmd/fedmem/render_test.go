package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRenderCommand runs the verb end to end: manifests on stdout,
// warnings on stderr, usage errors with exit code 2.
func TestRenderCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"render", "k8s", "--profile", "strict", "--image", "agent:1", "--gate-image", "fedmem:1", "--", "agent", "-x"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	for _, s := range []string{"kind: Pod", "kind: NetworkPolicy", "kind: ConfigMap", "localhostProfile: profiles/fedmem-strict.json", "- agent\n    - -x"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("stdout lacks %q", s)
		}
	}
	if strings.Contains(out.String(), "warning") || !strings.Contains(errb.String(), "fedmem: warning: ") {
		t.Errorf("warnings belong on stderr only\nstderr: %s", errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"render", "k8s", "--profile", "strict", "--image", "a", "--gate-image", "g", "--agent-uid", "0"}, &out, &errb); code != exitUsage || out.Len() != 0 {
		t.Errorf("--agent-uid 0: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"render", "seccomp"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), `"defaultAction": "SCMP_ACT_ALLOW"`) {
		t.Errorf("render seccomp: exit %d\n%s", code, out.String())
	}
}
