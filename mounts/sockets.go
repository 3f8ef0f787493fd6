package mounts

import (
	"github.com/fedmem/fedmem/vault"
)

// WhyListedSocket is the Why of a listed unix socket's bind.
const WhyListedSocket = "profile: unix_sockets"

// listedSockets binds every listed unix socket (profile unix_sockets) that
// no earlier mount binds back — one in the host tree shown read-only
// (/srv, /opt, /var/lib…), in the workdir or a writable path — onto itself,
// read-only and marked Idmap: for a root caller the backend attaches it
// idmapped owner→agent, so a socket the caller owns answers the agent's
// uid whatever its mode (connect(2) needs write permission on it; a root
// 0755 socket refused the agent before: issue 23). Those under the hidden
// shared directories (addHostAuthority) and in an allow-list home (Build)
// are bound there already. A socket inside the vault stays the vault's.
// The bind is also a mount point: the agent cannot unlink or rename the
// listed name and put a link to another socket in its place.
func listedSockets(pl *Plan, in Input, exists func(string) (bool, bool)) []Mount {
	bound := map[string]bool{}
	for _, m := range pl.Mounts {
		if m.Kind == BindRO && m.Why == WhyListedSocket {
			bound[m.Target] = true
		}
	}
	var out []Mount
	for _, s := range pl.UnixSockets {
		if _, linked := socketLinked(in, s); linked {
			continue // addHostAuthority warns
		}
		if bound[s] || vault.Within(s, in.Vault) || (pl.HomeAllowlist && vault.Within(s, in.Home)) {
			continue
		}
		if ok, isDir := exists(s); !ok || isDir {
			continue // addHostAuthority warns
		}
		bound[s] = true
		out = append(out, Mount{Kind: BindRO, Source: s, Target: s, Idmap: true, Why: WhyListedSocket})
	}
	return out
}

// RuleSocketNoLink names the rule in the warning for a listed socket whose
// path goes through a symbolic link.
const RuleSocketNoLink = "unix-socket-no-link"

// socketLinked reports whether the listed path s goes through a symbolic
// link (any component, the socket's own name included), and where it
// resolves. Such a path is never bound: the bind would follow the link on
// the host and in the sandbox alike, and a link the agent left in a
// writable folder (the listed socket's folder moved aside, a link put in
// its place: the bind is on the socket, not on its folder) would choose
// which host socket — or file — the next session binds, idmapped
// owner→agent (a root-only socket in the host tree, the host's
// /run/docker.sock): issue 22's red team, TestRT22ListedSocketLinkPlanted.
func socketLinked(in Input, s string) (string, bool) {
	if in.RealPath == nil {
		return s, false
	}
	r := in.RealPath(s)
	if r != s {
		return r, true
	}
	if in.Readlink != nil {
		// A dangling link resolves to nothing (RealPath returns it as it
		// is): it is a link all the same.
		if t, err := in.Readlink(s); err == nil {
			return t, true
		}
	}
	return s, false
}
