package policy

import (
	"net/url"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/vault/note"
)

// Remote is the Git remote a gate pushes its promotions to and fast-forwards
// from (see gate/sync.go and docs/multi-machine.md).
type Remote struct {
	// URL is file://, git://, http(s)://, ssh:// or scp-like user@host:path.
	// It never carries a secret: the policy is in the vault, which every
	// sandbox reads. Credentials come from the gate user's own Git
	// credential helpers and SSH keys.
	URL string
	// Branch is the remote branch; "" means the vault's own branch name.
	Branch string
	// Timeout bounds each remote operation (one fetch, one push), connect
	// included: a remote that accepts and never answers costs at most
	// this. Default DefaultRemoteTimeout.
	Timeout time.Duration
	// Line is where the block starts in the policy file.
	Line int
}

// Bounds of remote.timeout.
const (
	DefaultRemoteTimeout = 60 * time.Second
	MaxRemoteTimeout     = 30 * time.Minute
)

var (
	scpLikeRe = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:[^\\]+$`)
	branchRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$`)
)

// RemoteURLError says why a remote URL is refused, or "".
func RemoteURLError(s string) string {
	if s == "" {
		return "is empty"
	}
	if strings.ContainsAny(s, " \t\r\n\x00") {
		return "contains white space or a control character"
	}
	if !strings.Contains(s, "://") {
		if scpLikeRe.MatchString(s) && !strings.HasPrefix(s, "-") {
			return ""
		}
		return "is not a URL (file://, git://, http://, https://, ssh:// or user@host:path)"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "does not parse: " + err.Error()
	}
	switch u.Scheme {
	case "file", "git", "http", "https", "ssh":
	default:
		return "has scheme " + u.Scheme + "; allowed: file, git, http, https, ssh"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return "carries a password: the policy is readable by every sandbox; give the gate user a credential helper or an SSH key instead"
		}
		if u.Scheme == "http" || u.Scheme == "https" {
			return "carries a user name; put credentials in the gate user's credential helper, not in the policy"
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "has a query or fragment (tokens do not belong in the policy)"
	}
	if u.Scheme == "file" && (u.Host != "" || !strings.HasPrefix(u.Path, "/")) {
		return "file:// URLs name an absolute local path (file:///srv/vault.git)"
	}
	if u.Scheme != "file" && u.Host == "" {
		return "has no host"
	}
	return ""
}

// BranchError says why a branch name is refused, or "".
func BranchError(b string) string {
	switch {
	case !branchRe.MatchString(b):
		return "must be letters, digits, '.', '_', '-' and '/' (at most 100)"
	case strings.Contains(b, "..") || strings.Contains(b, "//") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") || strings.HasSuffix(b, ".") || strings.Contains(b, "/."):
		return "is not a valid Git branch name"
	}
	return ""
}

func (c *checker) remote(v *yaml.Node) *Remote {
	r := &Remote{Line: v.Line, Timeout: DefaultRemoteTimeout}
	c.mapping(v, "remote", func(k string, v2 *yaml.Node) {
		switch k {
		case "url":
			r.URL = c.str(v2, "remote.url")
			if why := RemoteURLError(r.URL); why != "" && v2.Kind == yaml.ScalarNode {
				c.errf(v2, "remote.url %s", why)
			}
		case "branch":
			r.Branch = c.str(v2, "remote.branch")
			if why := BranchError(r.Branch); why != "" && v2.Kind == yaml.ScalarNode {
				c.errf(v2, "remote.branch %q %s", r.Branch, why)
			}
		case "timeout":
			s := c.str(v2, "remote.timeout")
			d, err := time.ParseDuration(s)
			if err != nil || d < time.Second || d > MaxRemoteTimeout {
				c.errf(v2, "remote.timeout must be a duration from 1s to 30m such as 60s (got %q)", s)
			} else {
				r.Timeout = d
			}
		default:
			c.unknown(v, "remote", k)
		}
	})
	if v.Kind == yaml.MappingNode && note.MapGet(v, "url") == nil {
		c.errf(v, "remote needs `url` (remove the remote block for a vault on one machine)")
	}
	return r
}
