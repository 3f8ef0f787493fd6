package profiles

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// systemDirs must never be writable, nor anything inside them: a writable
// bind there changes the host (binaries, libraries, configuration, boot,
// kernel interfaces) for everyone, outside the sandbox's lifetime.
var systemDirs = []string{
	"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/boot", "/proc", "/sys", "/dev", "/root", "/var/spool", "/var/lib",
}

// broadDirs may hold a specific writable path, but must never be writable as
// a whole: they hold every user's files or the host's state.
var broadDirs = []string{"/", "/home", "/var", "/run", "/opt", "/srv", "/mnt", "/media", "/tmp"}

// broadHome are home paths whose being writable lets the agent persist code
// or settings that run outside the sandbox (shell startup files, autostart,
// user services, the user's bin directories) or that cover many programs'
// configuration at once.
var broadHome = []string{
	".config", ".local", ".local/share", ".local/state", ".local/bin", "bin",
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile",
	".zshenv", ".config/autostart", ".config/systemd", ".config/environment.d",
	".config/fish", ".ssh", ".gnupg",
}

// secretPrefixes are environment-variable prefixes that name a vendor's
// credentials; secretSuffixes and secretInfixes catch the rest by name.
var (
	secretPrefixes = []string{"AWS_", "ANTHROPIC_", "OPENAI_", "GITHUB_", "GH_", "GITLAB_", "GOOGLE_", "GCP_", "AZURE_", "HF_", "HUGGINGFACE_", "NPM_", "DOCKER_", "VAULT_", "CLAUDE_"}
	secretSuffixes = []string{"_TOKEN", "_KEY", "_SECRET", "_CREDENTIALS", "_PAT", "_AUTH"}
	secretInfixes  = []string{"PASSWORD", "PASSWD", "SECRET", "TOKEN", "API_KEY", "PRIVATE"}
)

// Check enforces the invariants of a resolved profile beyond Validate (which
// Load already ran). errs break a rule and make the profile unusable for
// `fedmem profile check`; warnings name settings that weaken the sandbox but
// may be wanted (an agent needs its own API key). Check is pure.
func Check(p *Profile) (warnings []string, errs []error) {
	if err := p.Validate(); err != nil {
		errs = append(errs, err)
	}
	for i, w := range p.Writable {
		if !path.IsAbs(w) {
			continue // Validate said so
		}
		c := path.Clean(w)
		var inside, contained []string
		for _, s := range systemDirs {
			if within(c, s) {
				inside = append(inside, s)
			} else if within(s, c) {
				contained = append(contained, s)
			}
		}
		switch {
		case len(inside) > 0:
			errs = append(errs, &RuleError{Field: "writable", Value: w, Rule: "writable-system-dir",
				Msg: fmt.Sprintf("writable[%d] %q lies inside the system directory %s: writes would change the host; make writable only a project or cache directory", i, w, inside[0])})
		case slices.Contains(broadDirs, c):
			errs = append(errs, &RuleError{Field: "writable", Value: w, Rule: "writable-broad-dir",
				Msg: fmt.Sprintf("writable[%d] %q is the whole of %s: writable paths must be specific", i, w, c)})
		case len(contained) > 0:
			errs = append(errs, &RuleError{Field: "writable", Value: w, Rule: "writable-contains-system-dir",
				Msg: fmt.Sprintf("writable[%d] %q contains the system directories %s: writable paths must be specific", i, w, strings.Join(contained, ", "))})
		}
		if strings.HasPrefix(c, "/home/") && strings.Count(c, "/") == 2 {
			warnings = append(warnings, fmt.Sprintf("writable[%d] %q is a whole home directory: the agent can persist code there (shell startup files); secrets stay masked", i, w))
		}
	}
	if p.Vault.Receipts == ReceiptsOff {
		warnings = append(warnings, "vault.receipts: off: which vault notes the agent read is not recorded (fedmem audit readers cannot name this profile's sessions)")
	}
	if p.Home.Mode == HomeRO {
		warnings = append(warnings, "home.mode: ro shows the whole home read-only: the agent reads every file not masked and reaches every unix socket there its uid may write (docker, podman, an editor's server); use home.mode: allowlist and name what it needs in home.show")
	}
	if p.Home.Mode == "hidden" && len(p.Home.Writable) > 0 {
		warnings = append(warnings, fmt.Sprintf("home.writable %v has no effect: home.mode is hidden", p.Home.Writable))
	}
	if p.Home.Mode != "hidden" {
		for _, w := range p.Home.Writable {
			c := path.Clean(w)
			for _, b := range broadHome {
				if c == b {
					warnings = append(warnings, fmt.Sprintf("home.writable %q is broad: the agent can leave code or settings there that run outside the sandbox; name the agent's own directory (e.g. .config/AGENT/)", w))
					break
				}
			}
			for _, m := range p.Home.Mask {
				mc := path.Clean(m)
				if within(c, mc) || within(mc, c) {
					warnings = append(warnings, fmt.Sprintf("home.writable %q overlaps home.mask %q: the mask wins, that part stays hidden", w, m))
				}
			}
		}
	}
	if p.Network == NetworkHost {
		warnings = append(warnings, "network: host shares the host's network: the agent reaches every service on the host's loopback (databases, Docker or Kubernetes APIs) and the cloud metadata endpoint (169.254.169.254); use network: public (any public address, through fedmem-run's proxy)")
	}
	if p.Network == NetworkHost || p.Network == NetworkPublic {
		var secret, creds []string
		for _, c := range p.Credentials {
			if c.Env != "" {
				creds = append(creds, c.Env)
			}
		}
		for _, e := range p.Env.Pass {
			if SecretLooking(e) && !contains(creds, e) {
				secret = append(secret, e)
			}
		}
		if len(secret) > 0 {
			note := ""
			if len(creds) > 0 {
				note = fmt.Sprintf(" (the agent gets placeholders for %s: credentials; any other variable these match passes as is)", strings.Join(creds, ", "))
			}
			warnings = append(warnings, fmt.Sprintf("network: %s with env.pass %s: the agent can send these secrets anywhere%s; give it its own, narrowly scoped key, name it under credentials, or use network: allowlist or none", p.Network, strings.Join(secret, ", "), note))
		}
	}
	errs = append(errs, stateErrors(p)...)
	errs = append(errs, showErrors(p)...)
	errs = append(errs, commandArgsErrors(p)...)
	warnings = append(warnings, persistenceWarnings(p)...)
	if !contains(p.Require, "seccomp") {
		warnings = append(warnings, "require does not list seccomp: on a kernel without seccomp the agent would run without a syscall filter instead of being refused")
	}
	return warnings, errs
}

// SecretLooking reports whether an env.pass entry (a NAME or NAME_* prefix)
// names, or may match, a variable that looks like a credential.
func SecretLooking(name string) bool {
	n := strings.ToUpper(name)
	if n == "*" {
		return true
	}
	prefix, wild := strings.CutSuffix(n, "*")
	for _, p := range secretPrefixes {
		if strings.HasPrefix(prefix, p) || (wild && strings.HasPrefix(p, prefix) && prefix != "") {
			return true
		}
	}
	if wild {
		return false
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, s := range secretInfixes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// within reports whether clean absolute path p equals base or lies beneath it.
func within(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, base+"/")
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
