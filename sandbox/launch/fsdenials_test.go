package launch

import (
	"strings"
	"testing"
)

// TestFSDenialsPrecedence: --fs-denials wins over $FEDMEM_FS_DENIALS,
// which wins over the default (on exactly with --events); a value other
// than 0 or 1 is an error naming the variable; an empty one is unset.
func TestFSDenialsPrecedence(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		flag   *bool
		env    []string
		events string
		want   bool
		why    string
	}{
		{want: false, why: "default without --events"},
		{env: []string{"FEDMEM_FS_DENIALS="}, events: "e.jsonl", want: true, why: "default with --events"}, // empty: unset
		{events: "e.jsonl", want: true, why: "default with --events"},
		{env: []string{"FEDMEM_FS_DENIALS=1"}, want: true, why: "$FEDMEM_FS_DENIALS"},
		{env: []string{"FEDMEM_FS_DENIALS=0"}, events: "e.jsonl", want: false, why: "$FEDMEM_FS_DENIALS"},
		{env: []string{"FEDMEM_FS_DENIALS=1", "FEDMEM_FS_DENIALS=0"}, want: false, why: "$FEDMEM_FS_DENIALS"}, // the last one, as getenv
		{flag: &on, env: []string{"FEDMEM_FS_DENIALS=0"}, want: true, why: "--fs-denials"},
		{flag: &off, env: []string{"FEDMEM_FS_DENIALS=1"}, events: "e.jsonl", want: false, why: "--fs-denials"},
	} {
		o := &Options{FSDenials: c.flag, Environ: append([]string{"PATH=/bin"}, c.env...), Events: c.events}
		got, why, err := o.fsDenials()
		if err != nil || got != c.want || why != c.why {
			t.Errorf("flag %v env %v events %q: %v %q %v, want %v %q", c.flag, c.env, c.events, got, why, err, c.want, c.why)
		}
	}
	for _, v := range []string{"yes", "true", "2", " 1"} {
		o := &Options{Environ: []string{"FEDMEM_FS_DENIALS=" + v}}
		if _, _, err := o.fsDenials(); err == nil || !strings.Contains(err.Error(), "FEDMEM_FS_DENIALS") {
			t.Errorf("FEDMEM_FS_DENIALS=%q: err %v", v, err)
		}
	}
}
