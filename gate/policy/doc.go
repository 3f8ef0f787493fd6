// Package policy loads and checks the gate policy (00-global/policy.yaml):
// reviewers, the type → folder map, risk and TTL rules, and size limits.
//
// It promises: unknown keys, wrong types and out-of-range values are errors
// that name the file, line and key; a missing file means Default(); a policy
// can never send a promotion into the inbox, the archive, a hidden path or a
// folder that is not part of the vault layout. Parsing uses the same strict
// YAML rules as drafts (no anchors, aliases, tags or duplicate keys).
package policy
