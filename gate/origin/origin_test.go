package origin

import (
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
)

func verified(profile, hash string) Origin {
	return Origin{Record: &vault.SessionRecord{Session: "s1", Profile: profile, ProfileHash: hash, UID: 1000}, Verified: true}
}

func TestStringNeverTrustsAnUnverifiedRecord(t *testing.T) {
	o := verified("ci", "h")
	o.Trusted = true
	if got := o.String(); got != "trusted:ci" {
		t.Fatalf("String = %q", got)
	}
	o.Verified = false // Trusted left set by mistake must not show
	if got := o.String(); got != "unverified" {
		t.Fatalf("unverified but Trusted: String = %q, want unverified", got)
	}
	if got := (Origin{}).String(); got != "unverified" {
		t.Fatalf("no record: String = %q", got)
	}
	if got := verified("strict", "h").String(); got != "verified:strict" {
		t.Fatalf("String = %q", got)
	}
}

func TestTrustProfileBuiltinNeedsItsHash(t *testing.T) {
	want := BuiltinHash("ci")
	if want == "" {
		t.Fatal("BuiltinHash(ci) is empty: ci is a built-in profile")
	}
	if BuiltinHash("no-such-profile") != "" {
		t.Fatal("BuiltinHash of an unknown name is not empty")
	}
	ap := &policy.AutoPromote{Profiles: []string{"ci"}}

	o := verified("ci", want)
	TrustProfile(&o, ap)
	if !o.Trusted || o.Profile != "ci" {
		t.Fatalf("built-in ci with its own hash: %+v, want trusted", o)
	}

	o = verified("ci", strings.Repeat("0", 64)) // a local file named ci
	TrustProfile(&o, ap)
	if o.Trusted || !strings.Contains(o.Why, "not the built-in's") {
		t.Fatalf("ci with another hash: trusted=%v why=%q", o.Trusted, o.Why)
	}

	o = verified("strict", BuiltinHash("strict"))
	TrustProfile(&o, ap)
	if o.Trusted || !strings.Contains(o.Why, `does not trust profile "strict"`) {
		t.Fatalf("a profile auto_promote does not name: trusted=%v why=%q", o.Trusted, o.Why)
	}

	o = verified("ci", want)
	o.Verified = false
	TrustProfile(&o, ap)
	if o.Trusted {
		t.Fatal("an unverified record was trusted")
	}
}

func TestTrustProfilePinnedLocal(t *testing.T) {
	pin := strings.Repeat("ab", 32)
	ap := &policy.AutoPromote{Profiles: []string{"team@" + pin}}
	o := verified("team", pin)
	TrustProfile(&o, ap)
	if !o.Trusted || o.Profile != "team@"+pin {
		t.Fatalf("pinned local profile with its hash: %+v", o)
	}
	o = verified("team", strings.Repeat("cd", 32))
	TrustProfile(&o, ap)
	if o.Trusted || !strings.Contains(o.Why, "not the pinned") {
		t.Fatalf("pinned local profile, other hash: trusted=%v why=%q", o.Trusted, o.Why)
	}
	o = verified("team", pin)
	TrustProfile(&o, &policy.AutoPromote{Profiles: []string{"team"}})
	if o.Trusted || !strings.Contains(o.Why, "must pin it") {
		t.Fatalf("unpinned local profile: trusted=%v why=%q", o.Trusted, o.Why)
	}
}

func TestForDraftOwnership(t *testing.T) {
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	base := verified("ci", "h")
	base.Trusted, base.Profile = true, "ci"
	base.Record.Ended = end.Format(time.RFC3339Nano)
	ok := &DraftOwner{UID: 1000, Mode: 0o644, Ctime: end.Add(-time.Minute)}

	if got := base.ForDraft(ok); !got.Verified || !got.Trusted {
		t.Fatalf("the session's own draft: %+v", got)
	}
	for _, c := range []struct {
		name string
		own  *DraftOwner
		why  string
	}{
		{"no owner recorded", nil, "not recorded"},
		{"another uid", &DraftOwner{UID: 1001, Mode: 0o644, Ctime: ok.Ctime}, "belongs to uid 1001"},
		{"group-writable", &DraftOwner{UID: 1000, Mode: 0o664, Ctime: ok.Ctime}, "writable by its group"},
		{"world-writable", &DraftOwner{UID: 1000, Mode: 0o646, Ctime: ok.Ctime}, "writable by its group or others"},
		{"changed after the end", &DraftOwner{UID: 1000, Mode: 0o644, Ctime: end.Add(time.Second)}, "after the session ended"},
		{"unknown change time", &DraftOwner{UID: 1000, Mode: 0o644}, "change time"},
	} {
		got := base.ForDraft(c.own)
		if got.Verified || got.Trusted || got.Profile != "" || !strings.Contains(got.Why, c.why) {
			t.Errorf("%s: verified=%v trusted=%v profile=%q why=%q; want unverified, why containing %q",
				c.name, got.Verified, got.Trusted, got.Profile, got.Why, c.why)
		}
		if got.String() != "unverified" {
			t.Errorf("%s: String = %q", c.name, got.String())
		}
	}
	bad := base
	rec := *base.Record
	rec.Ended = "yesterday"
	bad.Record = &rec
	if got := bad.ForDraft(ok); got.Verified || !strings.Contains(got.Why, "RFC 3339") {
		t.Fatalf("a record with an unparsable end: %+v", got)
	}
	// A session still running (no end recorded) does not need a ctime.
	run := verified("ci", "h")
	if got := run.ForDraft(&DraftOwner{UID: 1000, Mode: 0o600}); !got.Verified {
		t.Fatalf("a running session's own draft: %+v", got)
	}
}
