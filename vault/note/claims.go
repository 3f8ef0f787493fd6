package note

import "strings"

// claimedKeys are the trust-bearing keys a draft may write about itself: in
// any letter case, the gate moves them under `claimed:` and never decides on
// them (`risk` may only raise the policy's risk).
var claimedKeys = map[string]bool{
	"status": true, "verified": true, "generated": true, "stale_after": true,
	"confidence": true, "risk": true, "superseded_by": true, "claimed": true,
	"reviewer": true, "reviewers": true, "reviewed_by": true, "approved_by": true, "approved": true,
	"verified_by": true, "origin": true, "profile": true, "session": true,
}

// IsClaimedKey reports whether a top-level key is a claim (any letter case).
func IsClaimedKey(k string) bool {
	l := strings.ToLower(k)
	if claimedKeys[l] {
		return true
	}
	for _, o := range GateOwned {
		if strings.EqualFold(o, k) {
			return true
		}
	}
	return false
}

// authorshipKeys say who wrote or vouched for something; in a draft they
// are the agent's word (compared folded, FoldKey).
var authorshipKeys = map[string]bool{
	"author": true, "authors": true, "authored_by": true, "author_id": true, "created_by": true,
	"written_by": true, "signed_by": true, "signed_off_by": true, "owner_verified": true, "human": true,
}

// IsAuthorshipKey reports whether k says who wrote or vouched for
// something (compared folded, FoldKey).
func IsAuthorshipKey(k string) bool { return authorshipKeys[FoldKey(k)] }

// IsProvenanceKey reports whether k is gate-owned or an authorship key: in
// a draft, at any depth, the agent's word about its own provenance.
func IsProvenanceKey(k string) bool {
	return IsGateOwned(k) || IsAuthorshipKey(k)
}
