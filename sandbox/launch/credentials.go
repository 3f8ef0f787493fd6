package launch

import (
	"slices"
	"strings"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox/credentials"
)

// The session's credentials are package sandbox/credentials, which reads
// no profile: the profile's entries become its Sources here.

// StageCredentials: a credential's source is missing, unreadable or
// malformed, or the credential helper could not start.
const StageCredentials = mounts.StageCredentials

// credentialSources are p's credentials as sandbox/credentials reads them.
func credentialSources(p *profiles.Profile) []credentials.Source {
	out := make([]credentials.Source, 0, len(p.Credentials))
	for i := range p.Credentials {
		c := &p.Credentials[i]
		hosts, _ := c.HostRules() // profiles' check parsed them
		header := ""
		if c.Header != "" && !c.BasicAuth {
			header = c.HeaderName()
		}
		out = append(out, credentials.Source{Name: c.Name, Env: c.Env, File: c.File, Path: c.Path, Command: c.Command,
			Hosts: proxyRules(hosts), Header: header, BasicAuth: c.BasicAuth, Optional: c.Optional, KeepSuffix: c.KeepSuffix,
			Body: c.Body, FromResponse: c.FromResponse, Seeded: c.Seeded, Where: c.Where})
	}
	return out
}

// readCredentials reads every credential of p from its source
// (credentials.Read): an error is the session's refusal, stage
// credentials, naming the profile's file and line.
//
// A command source runs with environ's PATH as hostPATH leaves it: the
// programs it runs by name (sh -c 'secret-tool …', env, pass's gpg,
// git's credential helpers) come from no folder the agent writes either
// (TestRedTeamCredentialCommandChildOnWorkdirPath); commandInWritable
// judges its own program.
//
// A profile without credentials reads nothing: its PATH is not filtered
// for a command it does not have (a second walk of every PATH entry's
// links at each start).
func readCredentials(p *profiles.Profile, environ []string, home string, writable []string) ([]credentials.Secret, error) {
	return readCredentialsIn(p, environ, home, writable, mounts.ResolveRoots(writable))
}

// readCredentialsIn is readCredentials with writable's links resolved
// once (roots), for the session's own PATH too.
func readCredentialsIn(p *profiles.Profile, environ []string, home string, writable []string, roots mounts.Roots) ([]credentials.Secret, error) {
	srcs := credentialSources(p)
	if len(srcs) == 0 {
		return nil, nil
	}
	env := slices.Clone(environ)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kept, _ := hostPATHIn(v, roots)
			env[i] = "PATH=" + kept
		}
	}
	secrets, err := credentials.Read(srcs, env, home, writable)
	if err != nil {
		return nil, staged(StageCredentials, err)
	}
	return secrets, nil
}

// absentCredentialFiles are the source files of p's file credentials that
// do not exist at the start (credentials.AbsentFiles): Plan.Watch.
func absentCredentialFiles(p *profiles.Profile, home string, pl *mounts.Plan) []string {
	return credentials.AbsentFiles(credentialSources(p), home, pl)
}

// startCredentials starts the session's credentials (credentials.Start)
// on r's plan and environment, which it changes. The caller stops it.
func startCredentials(r *Resolved, secrets []credentials.Secret, environ []string, onEvent func(string, map[string]any)) (*credentials.Session, error) {
	cs, env, err := credentials.Start(r.ID, r.Spec.Plan, r.Spec.Env, profiles.Proxied(r.Profile.Network), secrets, environ, onEvent)
	if err != nil {
		return nil, staged(StageCredentials, err)
	}
	r.Spec.Env = env
	return cs, nil
}

// explainCredentials says, for --explain, whether the credential helper a
// run would start is there ("" for a profile without credentials).
func explainCredentials(r *Resolved) string {
	if len(r.Profile.Credentials) == 0 {
		return ""
	}
	if !profiles.Proxied(r.Profile.Network) {
		return "credentials: network " + r.Profile.Network + ": no proxy, the agent's placeholders are never exchanged"
	}
	p, err := credentials.HelperPath()
	if err != nil {
		return "credentials: MISSING: fedmem-cred not beside fedmem-run nor in PATH: a run with a credential source present would be refused"
	}
	return "credentials: injected by " + p + " (per-session CA; TLS terminated for the credentials' hosts only)"
}
