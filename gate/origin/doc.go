// Package origin is what the gate knows about the session a draft came
// from: the session record fedmem-run wrote, proven by its owner, group and
// mode read through the inbox descriptor (Of), and whether the policy's
// auto_promote trusts its profile. Nothing in it is taken from the draft.
package origin
