package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// complete sources script in `bash --norc --noprofile` (no bash-completion
// package loaded: the test checks it is not), sets COMP_WORDS/COMP_CWORD
// for words (the last one is being completed) and calls the function
// `complete -p NAME` names, as bash does on TAB. It returns COMPREPLY, one
// per line, and what the shell wrote on stderr.
func complete(t *testing.T, script, dir, home string, words ...string) (reply []string, stderr string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "completion.bash")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	name := filepath.Base(words[0])
	sh := `if declare -F _get_comp_words_by_ref >/dev/null || declare -F _init_completion >/dev/null || declare -F _command_offset >/dev/null; then echo "bash-completion is loaded" >&2; exit 3; fi
. "$1" || exit 4
# Called by hand, not by a TAB: compopt (a builtin that works only while
# bash runs a completion) would refuse; a function of that name is what
# the scripts then see, and they skip it.
compopt() { :; }
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
fn=$(complete -p ` + name + ` | sed -n 's/.*-F \([^ ]*\).*/\1/p')
[ -n "$fn" ] || { echo "no completion function for ` + name + `" >&2; exit 5; }
"$fn" ` + name + ` "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf 'REPLY:%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", sh, "bash", f)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(words[0]) + ":/usr/bin:/bin", "HOME=" + home, "LC_ALL=C"}
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", words, err, so.String(), se.String())
	}
	for _, l := range strings.Split(so.String(), "\n") {
		if r, ok := strings.CutPrefix(l, "REPLY:"); ok && r != "" {
			reply = append(reply, strings.TrimSpace(strings.SplitN(r, "\t", 2)[0]))
		}
	}
	return reply, se.String()
}

// TestCompletionWithoutBashCompletion: the bash completion scripts of
// fedmem and fedmem-run work in a bash without the bash-completion package
// (issue 23: cobra's script calls _get_comp_words_by_ref, fedmem-run's
// called _command_offset; every TAB printed "command not found") and
// complete profile names: the built-ins and a project's own
// (./.fedmem/profiles/NAME.yaml) and user's (~/.config/fedmem/profiles).
func TestCompletionWithoutBashCompletion(t *testing.T) {
	bins := testutil.Binaries(t)
	dir, home := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(dir, ".fedmem", "profiles", "myproj.yaml"), filepath.Join(home, ".config", "fedmem", "profiles", "mine.yaml")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("name: x\nextends: default\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := func(argv ...string) string {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		return string(out)
	}
	fedmemBash := script(bins.Fedmem, "completion", "bash")
	runBash := script(bins.FedmemRun, "--completion", "bash")
	has := func(reply []string, want ...string) bool {
		for _, w := range want {
			found := false
			for _, r := range reply {
				found = found || r == w
			}
			if !found {
				return false
			}
		}
		return true
	}
	for _, c := range []struct {
		script string
		words  []string
		want   []string
	}{
		{runBash, []string{bins.FedmemRun, "--profile", ""}, []string{"claude", "codex", "default", "strict", "myproj", "mine"}},
		{runBash, []string{bins.FedmemRun, "--profile", "cl"}, []string{"claude"}},
		{runBash, []string{bins.FedmemRun, "--vault", dir, "--", "bas"}, []string{"bash"}},
		{fedmemBash, []string{bins.Fedmem, "review", ""}, []string{"list", "show", "approve", "reject"}},
		{fedmemBash, []string{bins.Fedmem, "profile", "explain", ""}, []string{"claude", "default", "strict", "myproj", "mine"}},
		{fedmemBash, []string{bins.Fedmem, "review", "approve", "--profile", "co"}, []string{"codex"}},
	} {
		reply, stderr := complete(t, c.script, dir, home, c.words...)
		if stderr != "" {
			t.Errorf("%v: the shell said:\n%s", c.words[1:], stderr)
		}
		if !has(reply, c.want...) {
			t.Errorf("%v: completions %q, want at least %q", c.words[1:], reply, c.want)
		}
	}
}
