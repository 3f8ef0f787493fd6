package launch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox"
)

// LocaleVars are the locale variables (POSIX and glibc) an env.pass entry
// "LC_*" stands for: exactly these names, never any LC_ prefix, so that a
// caller's LC_ANY_TOKEN=… does not reach the agent.
var LocaleVars = []string{
	"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC",
	"LC_TIME", "LC_MONETARY", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE",
	"LC_MEASUREMENT", "LC_IDENTIFICATION",
}

// proxyVars are the proxy settings fedmem-run sets for a proxied network;
// the caller's own never pass then.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY"}

// passes reports whether variable k passes env.pass pattern pat: an exact
// name, "LC_*" (exactly LocaleVars), or a vendor prefix such as
// "ANTHROPIC_*" that the profile names deliberately.
func passes(pat, k string) bool {
	if pat == k {
		return true
	}
	prefix, wild := strings.CutSuffix(pat, "*")
	if !wild {
		return false
	}
	if prefix == "LC_" || prefix == "LC" {
		return slices.Contains(LocaleVars, k) && strings.HasPrefix(k, "LC_")
	}
	return prefix != "" && strings.HasPrefix(k, prefix)
}

// Env is the agent's environment: the caller's variables that the profile's
// env.pass names (FEDMEM_* never), the profile's env.set, HOME and the
// FEDMEM_ variables, and — with a proxied network — the proxy settings
// pointing at the sandbox's relay (the caller's own proxy settings are
// dropped: they would not be reachable, or would route around the policy).
func Env(p *profiles.Profile, pl *mounts.Plan, home string, environ []string) []string {
	var env []string
	proxied := profiles.Proxied(p.Network)
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(k, "FEDMEM_") {
			continue
		}
		if proxied && slices.Contains(proxyVars, strings.ToUpper(k)) {
			continue
		}
		for _, pat := range p.Env.Pass {
			if passes(pat, k) {
				env = append(env, kv)
				break
			}
		}
	}
	keys := make([]string, 0, len(p.Env.Set))
	for k := range p.Env.Set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+strings.ReplaceAll(p.Env.Set[k], "${HOME}", home))
	}
	env = append(env, "HOME="+home, "FEDMEM_VAULT="+pl.Vault, "FEDMEM_INBOX="+pl.Inbox, "FEDMEM_SESSION="+pl.Session)
	if proxied {
		// The only way out: fedmem-run's proxy, relayed by the sandbox's
		// pid 1 on its own loopback. HTTP(S) clients use the HTTP proxy; ALL_PROXY (curl, git's
		// libcurl for other schemes, SOCKS-aware tools) names the same
		// proxy's SOCKS5 port, socks5h: the proxy resolves names.
		proxy := fmt.Sprintf("http://127.0.0.1:%d", sandbox.ProxyPort)
		socks := fmt.Sprintf("socks5h://127.0.0.1:%d", sandbox.SocksPort)
		env = append(env, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy,
			"ALL_PROXY="+socks, "all_proxy="+socks)
	}
	env = agentEnv(pl, env)
	if !hasKey(env, "PATH") {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

func hasKey(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}
