package mounts

import (
	"github.com/fedmem/fedmem/profiles"
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
func listedSockets(pl *Plan, p *profiles.Profile, in Input, exists func(string) (bool, bool)) []Mount {
	bound := map[string]bool{}
	for _, m := range pl.Mounts {
		if m.Kind == BindRO && m.Why == WhyListedSocket {
			bound[m.Target] = true
		}
	}
	var out []Mount
	for _, s := range pl.UnixSockets {
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
