package request

import (
	"path"
	"strings"
	"time"
)

// A credential's source grammar, shared by the profile schema
// (profiles.Credential, which checks it) and the launcher's credentials
// (sandbox/credentials, which reads the sources), so that what a profile
// names and what fedmem-run reads can never drift apart.

// CommandTimeout bounds a credential's command source.
const CommandTimeout = 10 * time.Second

// IsYAMLFile says whether a credential file is read as YAML (by its name).
func IsYAMLFile(f string) bool {
	ext := strings.ToLower(path.Ext(f))
	return ext == ".yaml" || ext == ".yml"
}

// HasWildcardKey says whether a key path has a "*" key: every key of the
// object at that level (mcpOAuth.*.accessToken). Such a credential is
// placeholder only: no hosts, no from_response.
func HasWildcardKey(p string) bool {
	for _, k := range SplitKeyPath(p) {
		if k == "*" {
			return true
		}
	}
	return false
}

// SplitKeyPath splits a credential's dotted key path; `\.` is a dot inside
// a key (gh's hosts.yml: `github\.com.oauth_token`).
func SplitKeyPath(p string) []string {
	var keys []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '.':
			cur.WriteByte('.')
			i++
		case p[i] == '.':
			keys = append(keys, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	return append(keys, cur.String())
}
