package mounts

import "testing"

func TestParseGitConfig(t *testing.T) {
	src := "# c\n[core]\n\thooksPath = .githooks ; comment\n\tfsmonitor = \"touch /x; false\"\n[includeIf \"gitdir:~/w/\"]\n\tpath = ~/w.inc\n[alias] st = !sh ./tools/st.sh \\\n  --x\n[Remote.Origin]\nbare\n"
	ents, err := ParseGitConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"core.hookspath": ".githooks", "core.fsmonitor": "touch /x; false", "includeif.gitdir:~/w/.path": "~/w.inc", "alias.st": "!sh ./tools/st.sh   --x", "remote.origin.bare": "true"}
	for _, e := range ents {
		if w, ok := want[e.Name()]; !ok || w != e.Value {
			t.Errorf("%s = %q, want %q", e.Name(), e.Value, w)
		}
		delete(want, e.Name())
	}
	if len(want) > 0 {
		t.Errorf("missing %v", want)
	}
	for _, bad := range []string{"key = v\n", "[core\n", "[core]\n\tx = \"open\n", "[core]\n\t=v\n", "[core]\n\tx = a\\q\n"} {
		if _, err := ParseGitConfig([]byte(bad)); err == nil {
			t.Errorf("%q parsed, want a line error", bad)
		}
	}
}
