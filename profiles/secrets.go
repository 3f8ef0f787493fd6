package profiles

import (
	"path"
	"strings"
)

// Secret is one path under $HOME that holds a credential or private data a
// hostile agent must not read (and, with network, send away).
type Secret struct {
	Path string // relative to $HOME, slash-separated
	Why  string
	// Agent, when set, names whose own state this is (a built-in agent
	// profile): the path stays visible to a profile that opens it itself —
	// a home.writable or state entry that is it or one of its parents, or
	// a state seed read from it — and is masked for every other profile.
	Agent string
}

// HomeSecrets extend DefaultMasks (kept for profile checks: a profile may
// not open those at all). The home is read-only and shown as a whole, so
// this is a deny list: docs/profiles.md and docs/threat-model.md say what
// it cannot cover. Each entry is masked only where it exists.
//
// Why a deny list and not an allow list of home paths: tools read many
// harmless dotfiles (~/.gitconfig, ~/.config/<tool>, toolchains under
// ~/.local, ~/go, ~/.rustup) and an allow list would break them one by one;
// the masks are checked against the live mount table (mounts.Verify) like
// every other mount.
var HomeSecrets = []Secret{
	// Agents' own credentials, settings (env with API keys, MCP servers)
	// and transcripts: visible only to the profile that opens them.
	{".claude", "Claude Code's OAuth token (.credentials.json), settings env and transcripts", "claude"},
	{".claude.json", "Claude Code's state: MCP servers and their env", "claude"},
	{".codex", "Codex's auth.json (API key, OAuth tokens) and transcripts", "codex"},
	{".gemini", "Gemini CLI's OAuth credentials", "gemini"},
	{".config/github-copilot", "GitHub Copilot's OAuth tokens", "copilot"},
	// fedmem's per-profile state stores: a profile reaches its own only
	// through its state binds, never another profile's (claude's copy of
	// ~/.claude.json, its tokens).
	{StateRoot, "fedmem's per-profile state stores (other profiles' agent state)", ""},
	// Tool and cloud credentials.
	{".cargo/credentials", "cargo registry token", ""},
	{".cargo/credentials.toml", "cargo registry token", ""},
	{".terraform.d/credentials.tfrc.json", "Terraform Cloud/Enterprise tokens", ""},
	{".config/git/credentials", "git credential store", ""},
	{".config/hub", "hub's GitHub token", ""},
	{".config/op", "1Password CLI", ""},
	{".op", "1Password CLI", ""},
	{".gem/credentials", "RubyGems API key", ""},
	{".m2/settings.xml", "Maven server passwords", ""},
	{".m2/settings-security.xml", "Maven master password", ""},
	{".gradle/gradle.properties", "Gradle publishing credentials", ""},
	{".composer/auth.json", "Composer tokens", ""},
	{".config/composer/auth.json", "Composer tokens", ""},
	{".config/configstore", "tokens of Node CLIs (firebase, …)", ""},
	{".config/doctl", "DigitalOcean token", ""},
	{".config/rclone", "rclone remotes' keys", ""},
	{".s3cfg", "S3 keys", ""},
	{".boto", "Google Cloud Storage / boto keys", ""},
	{".oci", "Oracle Cloud keys", ""},
	{".databrickscfg", "Databricks tokens", ""},
	{".pgpass", "PostgreSQL passwords", ""},
	{".my.cnf", "MySQL passwords", ""},
	{".env", "dotenv secrets (API keys)", ""},
	{".pki", "NSS database: client certificates and keys", ""},
	{".vnc/passwd", "VNC password", ""},
	// Shell and REPL history: commands with tokens in them.
	{".bash_history", "shell history", ""},
	{".zsh_history", "shell history", ""},
	{".histfile", "shell history", ""},
	{".sh_history", "shell history", ""},
	{".local/share/fish/fish_history", "shell history", ""},
	{".python_history", "REPL history", ""},
	{".node_repl_history", "REPL history", ""},
	{".psql_history", "database client history", ""},
	{".mysql_history", "database client history", ""},
	{".sqlite_history", "database client history", ""},
	{".rediscli_history", "database client history", ""},
	{".irb_history", "REPL history", ""},
	{".lesshst", "pager search history", ""},
	{".viminfo", "editor history and registers", ""},
	// Browsers, mail and chat: cookies, sessions, saved passwords.
	{".mozilla", "Firefox profiles: cookies, sessions, saved passwords", ""},
	{".thunderbird", "mail and its passwords", ""},
	{".config/google-chrome", "Chrome profiles: cookies, sessions", ""},
	{".config/google-chrome-beta", "Chrome profiles: cookies, sessions", ""},
	{".config/chromium", "Chromium profiles: cookies, sessions", ""},
	{".config/BraveSoftware", "Brave profiles: cookies, sessions", ""},
	{".config/microsoft-edge", "Edge profiles: cookies, sessions", ""},
	{".config/vivaldi", "Vivaldi profiles: cookies, sessions", ""},
	{".config/opera", "Opera profiles: cookies, sessions", ""},
	{"snap/firefox", "Firefox (snap) profiles", ""},
	{"snap/chromium", "Chromium (snap) profiles", ""},
	{".var/app/org.mozilla.firefox", "Firefox (flatpak) profiles", ""},
	{".var/app/com.google.Chrome", "Chrome (flatpak) profiles", ""},
	{".var/app/org.chromium.Chromium", "Chromium (flatpak) profiles", ""},
	{".config/Slack", "Slack session tokens", ""},
	{".config/discord", "Discord session tokens", ""},
	{".config/Signal", "Signal's keys and messages", ""},
	{".local/share/TelegramDesktop", "Telegram session", ""},
}

// Mask is one home path a plan masks, with the reason.
type Mask struct {
	Path string // relative to $HOME
	Why  string
}

// HomeMasks are the home paths masked for p: DefaultMasks, HomeSecrets
// (an agent's own ones only where p does not open them) and p's home.mask.
func HomeMasks(p *Profile) []Mask {
	var out []Mask
	for _, m := range DefaultMasks {
		out = append(out, Mask{m, "secret"})
	}
	for _, s := range HomeSecrets {
		if s.Agent != "" && Opens(p, s.Path) {
			continue
		}
		why := "secret: " + s.Why
		if s.Agent != "" {
			why += " (masked outside a profile that opens it)"
		}
		out = append(out, Mask{s.Path, why})
	}
	for _, m := range p.Home.Mask {
		out = append(out, Mask{path.Clean(m), "secret: profile home.mask"})
	}
	return out
}

// Opens reports whether p itself opens the home path rel: a home.writable
// or state entry that is rel or one of its parents, or a state entry
// seeded from or bound to rel.
func Opens(p *Profile, rel string) bool {
	covers := func(w string) bool {
		c := cleanHomeRel(w)
		return c != "." && c != "" && (c == rel || strings.HasPrefix(rel, c+"/"))
	}
	for _, w := range p.Home.Writable {
		if covers(w) {
			return true
		}
	}
	for _, s := range p.State {
		if covers(s.Path) || (s.Seed != "" && cleanHomeRel(s.Seed) == rel) || (s.Real != "" && covers(s.Real)) {
			return true
		}
	}
	return false
}
