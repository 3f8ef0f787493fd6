package origin

import (
	"fmt"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault"
)

// Origin is what the gate knows about the session a draft came from. It is
// never taken from the draft: Record is the session record fedmem-run wrote
// in 90-inbox/.sessions/, Verified says the gate proved that record is the
// launcher's (see Of), Trusted that the policy's auto_promote trusts
// its profile.
type Origin struct {
	Record   *vault.SessionRecord
	Verified bool
	Trusted  bool
	// Why explains the first check that failed ("" when Trusted).
	Why string
	// Profile is the auto_promote entry that matched.
	Profile string
}

// String is the origin as a commit trailer and decision field show it.
func (o Origin) String() string {
	switch {
	case o.Record == nil || !o.Verified:
		return "unverified"
	case o.Trusted:
		return "trusted:" + o.Record.Profile
	default:
		return "verified:" + o.Record.Profile
	}
}

// LauncherGID resolves the policy's launcher group (a name or a gid).
func LauncherGID(ap *policy.AutoPromote) (int, error) {
	if ap == nil || ap.LauncherGroup == "" {
		return -1, nil
	}
	if n, err := strconv.Atoi(ap.LauncherGroup); err == nil {
		return n, nil
	}
	grp, err := user.LookupGroup(ap.LauncherGroup)
	if err != nil {
		return -1, fmt.Errorf("auto_promote.launcher_group %q: %w", ap.LauncherGroup, err)
	}
	return strconv.Atoi(grp.Gid)
}

var (
	builtinHashMu sync.Mutex
	builtinHashes = map[string]string{}
)

// BuiltinHash is the hash fedmem-run reports for a built-in profile ("" if
// name is not built in). The gate imports the pure-data profiles package
// only, never the sandbox.
func BuiltinHash(name string) string {
	builtinHashMu.Lock()
	defer builtinHashMu.Unlock()
	if h, ok := builtinHashes[name]; ok {
		return h
	}
	h := ""
	for _, b := range profiles.Builtins() {
		if b == name {
			if _, hh, err := profiles.Load(name); err == nil {
				h = hh
			}
		}
	}
	builtinHashes[name] = h
	return h
}

// TrustProfile sets o.Trusted when the policy's auto_promote names the
// record's profile: a built-in by name with the built-in's hash, any other
// profile pinned as name@sha256.
func TrustProfile(o *Origin, ap *policy.AutoPromote) {
	if ap == nil || o.Record == nil || !o.Verified {
		return
	}
	r := o.Record
	for _, e := range ap.Profiles {
		name, pin := policy.ProfilePin(e)
		if name != r.Profile {
			continue
		}
		switch want := BuiltinHash(name); {
		case pin != "" && pin == r.ProfileHash:
			o.Trusted, o.Profile = true, e
			return
		case pin != "":
			o.Why = fmt.Sprintf("profile %s ran with hash %.12s…, not the pinned %.12s…", name, r.ProfileHash, pin)
			return
		case want != "" && want == r.ProfileHash:
			o.Trusted, o.Profile = true, e
			return
		case want != "":
			o.Why = fmt.Sprintf("profile %s ran with hash %.12s…, not the built-in's %.12s… (a local file named like a built-in, or another fedmem version)", name, r.ProfileHash, want)
			return
		default:
			o.Why = fmt.Sprintf("profile %s is not built in; auto_promote must pin it as %s@<sha256>", name, name)
			return
		}
	}
	o.Why = fmt.Sprintf("auto_promote does not trust profile %q", r.Profile)
}

// DraftOwner is what fstat(2) said about the inode a draft's bytes were
// read from: the owner, the permission bits and the inode change time.
type DraftOwner struct {
	UID  int    `json:"uid"`
	Mode uint32 `json:"mode"`
	Ino  uint64 `json:"ino,omitempty"`
	// Ctime is the inode's change time while it was still in the session
	// folder (the claim's stat: the gate's own rename would move it);
	// zero when unknown.
	Ctime time.Time `json:"ctime,omitzero"`
}

// ForDraft narrows a session's proven origin to one of its drafts. The
// session record proves who ran the session, not who wrote a file in its
// folder: the folder is 2770 in the agents' group, so any host user in
// that group can drop a file there, and can rewrite a group-writable one.
// A draft is the session's only when its inode belongs to the record's uid,
// is writable by nobody else (no group or other write bit), and was last
// changed (ctime, which utimensat cannot set) before the session's
// recorded end, when the launcher recorded one. Otherwise the draft's
// Origin is unverified and it waits for a reviewer.
func (o Origin) ForDraft(own *DraftOwner) Origin {
	if !o.Verified || o.Record == nil {
		return o
	}
	fail := func(format string, args ...any) Origin {
		o.Verified, o.Trusted, o.Profile = false, false, ""
		o.Why = fmt.Sprintf(format, args...)
		return o
	}
	r := o.Record
	switch {
	case own == nil:
		return fail("the owner of the draft's file was not recorded when it was read")
	case own.UID != r.UID:
		return fail("the draft's file belongs to uid %d, not to the session's uid %d: someone other than the session wrote it", own.UID, r.UID)
	case own.Mode&0o022 != 0:
		return fail("the draft's file is writable by its group or others (mode %04o): anyone in that group could have written it; write drafts with mode 0644 or 0640 (umask 022)", own.Mode)
	}
	if r.Ended != "" {
		end, err := time.Parse(time.RFC3339Nano, r.Ended)
		switch {
		case err != nil:
			return fail("the session record's end %q is not an RFC 3339 time", clip(r.Ended))
		case own.Ctime.IsZero():
			return fail("the draft's file changed between the gate's look and its claim, so its change time in the session folder is unknown")
		case own.Ctime.After(end):
			return fail("the draft's file was last changed at %s, after the session ended at %s", own.Ctime.Format(time.RFC3339Nano), r.Ended)
		}
	}
	return o
}

// clip cuts s to 64 bytes for a message (as decide's Clip).
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
