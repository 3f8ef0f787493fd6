package escape

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestEnvExactAllowList: the environment reaches the agent by an exact
// allow list. Locale variables pass by name (LANG, LC_ALL, LC_TIME…); a
// secret whose name merely starts with LC_ (LC_ANY_TOKEN) does not, nor
// do the caller's cloud credentials, FEDMEM_ settings or proxy settings
// (replaced by the sandbox's proxy).
func TestEnvExactAllowList(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	secretEnv := []string{
		"LC_ANY_TOKEN=FAKE-LC-SECRET-6f6f", "LC_SECRET=FAKE-LC-SECRET-7a7a", "LCX=FAKE-LCX-8b8b",
		"AWS_SECRET_ACCESS_KEY=FAKE-AWS-ENV-9c9c", "GITHUB_TOKEN=FAKE-GH-ENV-0d0d", "FEDMEM_GATE_SECRET=FAKE-FM-1e1e",
		"HTTPS_PROXY=http://FAKE-CORP-PROXY:8080",
		"LC_ALL=C.UTF-8", "LC_TIME=C", "LANGUAGE=en",
	}
	for _, prof := range []string{"default", "claude", "codex", "strict"} {
		t.Run(prof, func(t *testing.T) {
			name := prof
			if prof == "strict" {
				name = strictProfile(t, e) // the container backends refuse its workdir: propose
			}
			r := e.runEnv(t, secretEnv, []string{"--profile", name}, "env")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			out := string(r.stdout)
			for _, s := range []string{"FAKE-LC-SECRET", "FAKE-LCX", "FAKE-AWS-ENV", "FAKE-GH-ENV", "FAKE-FM", "FAKE-CORP-PROXY"} {
				if strings.Contains(out, s) {
					t.Errorf("%s reached the agent:\n%s", s, out)
				}
			}
			for _, want := range []string{"LC_ALL=C.UTF-8\n", "LC_TIME=C\n", "LANGUAGE=en\n", "LANG=C\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s did not pass:\n%s", strings.TrimSpace(want), out)
				}
			}
		})
	}
}

// runEnv is e.run with extra variables in fedmem-run's environment.
func (e *env) runEnv(t *testing.T, vars, extra []string, argv ...string) *run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "", extra, argv...)
	cmd.Env = append(cmd.Env, vars...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("fedmem-run timed out\nstderr:\n%s", se.Bytes())
	}
	return &run{stdout: so.Bytes(), stderr: se.Bytes(), code: exitCode(err)}
}
