package resolve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
)

// ExplainOptions shape Explain's output.
type ExplainOptions struct {
	JSON bool
	// Layers describe the sandbox's layers (sandbox.DescribeLayers), when
	// the caller links the sandbox; nil leaves them out.
	Layers []string
	// Width folds the text to this many columns: fedmem-run --explain
	// and fedmem profile explain pass OutputWidth (the terminal's, else
	// DefaultWidth); 0 leaves lines whole. JSON is never folded.
	Width int
}

// Explain prints a resolved session: the profile, the vault, the plan's
// mounts, what is writable, the network, limits and warnings — the same
// text and JSON for `fedmem-run --explain` and `fedmem profile explain`.
// JSON keys are only ever added.
func Explain(out io.Writer, s *Session, o ExplainOptions) error {
	if o.JSON {
		return explainJSON(out, s, o)
	}
	if o.Width <= 0 {
		explainText(out, s, o, math.MaxInt)
		return nil
	}
	var buf bytes.Buffer
	explainText(&buf, s, o, o.Width)
	_, err := io.WriteString(out, foldLines(buf.String(), o.Width))
	return err
}

func explainJSON(w io.Writer, s *Session, o ExplainOptions) error {
	p, pl := s.Profile, s.Plan
	if o.JSON {
		out := map[string]any{
			"profile": p.Name, "profile_hash": s.ProfileHash, "placeholder_vault": s.Placeholder,
			"profile_source": s.ProfileSource, "profile_source_kind": s.ProfileSourceKind,
			"plan": pl, "allow": allowOf(p), "limits": p.Limits, "network": p.Network, "preset": presetRow(p),
			"uid": s.UID, "gid": s.GID, "identity_source": s.IdentitySource,
			"owner_uid": s.OwnerUID, "owner_gid": s.OwnerGID, "warnings": s.Warnings,
		}
		out["nested_sandbox"] = profiles.NestedSandboxNote(p, s.Argv0)
		out["credentials"] = credentialRows(p)
		if h := mounts.HomeTable(pl); h != nil {
			out["home"] = h
		}
		if o.Layers != nil {
			out["layers"] = o.Layers
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return nil
}

// explainText writes explain's text, unfolded but for its tables, which
// take a narrow form when their columns do not fit in width.
func explainText(w io.Writer, s *Session, o ExplainOptions, width int) {
	p, pl := s.Profile, s.Plan
	if s.Placeholder {
		fmt.Fprintf(w, "note: no --vault given; %s stands for the vault\n", s.Vault)
	}
	fmt.Fprintf(w, "profile %s (sha256 %s)\nsource  %s (%s)\nvault   %s\ninbox   %s\nworkdir %s\nhome    %s\nagent   uid %d gid %d (%s)\nnetwork %s\n",
		p.Name, s.ProfileHash[:12], s.ProfileSource, s.ProfileSourceKind, pl.Vault, pl.Inbox, pl.Workdir, pl.Home, s.UID, s.GID, s.IdentitySource, networkWords(p))
	if s.IdentitySource == "caller (plan only)" && s.UID == 0 {
		fmt.Fprintln(w, "note: the plan is the caller's; fedmem-run never runs an agent as uid 0 (run_as, --agent-user, sudo user, fedmem-agent or 65533: see `fedmem-run --explain`)")
	}
	if s.OwnerUID != s.UID {
		fmt.Fprintf(w, "owner   uid %d: writable binds it owns are idmapped %d→%d where the filesystem allows (the report's layers.identity says how each went)\n", s.OwnerUID, s.OwnerUID, s.UID)
	}
	if p.Preset != "" {
		fmt.Fprintf(w, "preset  %s\n", presetWords(p))
	}
	if allow := allowOf(p); len(allow) > 0 {
		fmt.Fprintf(w, "allow   %s (through fedmem-run's proxy)\n", strings.Join(allow, ", "))
	}
	for _, c := range credentialRows(p) {
		fmt.Fprintf(w, "credential %s: %s\n", c["name"], c["injected"])
	}
	if len(pl.Visible) > 0 {
		fmt.Fprintf(w, "visible %s (nothing else of the vault exists inside)\n", strings.Join(pl.Visible, ", "))
	}
	if lim := limitWords(p.Limits); lim != "" {
		fmt.Fprintf(w, "limits  %s\n", lim)
	}
	fmt.Fprintln(w)
	rows := [][4]string{}
	for _, m := range pl.Mounts {
		rows = append(rows, [4]string{string(m.Kind), m.Target, m.Source, m.Why})
	}
	writeTable(w, "", [4]string{"KIND", "TARGET", "SOURCE", "WHY"}, rows, width)
	if pl.HomeAllowlist {
		fmt.Fprintf(w, "\nhome %s: an allow-list (an empty read-only tmpfs); nothing else of the caller's home exists inside:\n", pl.Home)
		rows = rows[:0]
		for _, h := range mounts.HomeTable(pl) {
			rows = append(rows, [4]string{"~/" + h.Path, h.Access, h.Source, h.Why})
		}
		writeTable(w, "  ", [4]string{"PATH", "ACCESS", "SOURCE", "WHY"}, rows, width)
	} else if p.Home.Mode == profiles.HomeRO {
		fmt.Fprintf(w, "\nhome %s: read-only as a whole, secrets masked (home.mode: ro)\n", pl.Home)
	}
	if n := maskedSpecials(pl); n > 0 {
		fmt.Fprintf(w, "\nsockets and FIFOs masked: %d (not listed in unix_sockets)\n", n)
	}
	fmt.Fprintf(w, "\nwritable: %s\n", strings.Join(pl.Writable, ", "))
	fmt.Fprintf(w, "nested: %s\n", profiles.NestedSandboxNote(p, s.Argv0))
	if o.Layers != nil {
		fmt.Fprintln(w, "\nlayers:")
		for _, l := range o.Layers {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// writeTable writes a four-column table (name, target, source, why) as
// aligned columns when it fits in width; otherwise in a narrow form: the
// first two columns on a line, then the source (when it is not the same
// path as the target) and the why, each on its own line under the second
// column, folded later like any other line. Either form runs from its
// header to the next empty line.
func writeTable(w io.Writer, indent string, head [4]string, rows [][4]string, width int) {
	var wide bytes.Buffer
	tw := tabwriter.NewWriter(&wide, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, head[0], head[1], head[2], head[3])
	for _, r := range rows {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, r[0], r[1], r[2], r[3])
	}
	tw.Flush()
	fits := true
	for _, l := range strings.Split(wide.String(), "\n") {
		if utf8.RuneCountInString(strings.TrimRight(l, " ")) > width {
			fits = false
			break
		}
	}
	if fits {
		w.Write(wide.Bytes())
		return
	}
	col := 0
	for _, r := range rows {
		col = max(col, utf8.RuneCountInString(r[0]))
	}
	col = min(col, width/3) + 2
	pad := func(s string) string {
		if n := utf8.RuneCountInString(s); n < col {
			return s + strings.Repeat(" ", col-n)
		}
		return s + "  "
	}
	under := indent + strings.Repeat(" ", col)
	fmt.Fprintf(w, "%s%s%s (%s: below, when it differs; %s: below)\n", indent, pad(head[0]), head[1], strings.ToLower(head[2]), strings.ToLower(head[3]))
	for _, r := range rows {
		fmt.Fprintf(w, "%s%s\n", indent+pad(r[0]), r[1])
		if r[2] != "" && r[2] != r[1] {
			fmt.Fprintf(w, "%s%s %s\n", under, strings.ToLower(head[2]), r[2])
		}
		if r[3] != "" {
			fmt.Fprintf(w, "%s%s\n", under, r[3])
		}
	}
}

// credentialRows are the profile's credentials as explain shows them:
// name, source, hosts and how the real value travels (guarantee 8). No
// source is read: explain runs without the caller's secrets.
func credentialRows(p *profiles.Profile) []map[string]any {
	rows := []map[string]any{}
	for i := range p.Credentials {
		c := &p.Credentials[i]
		how := c.Injection() + "; the agent holds a placeholder of the same shape"
		if c.File != "" {
			how += " (a generated copy of the file at its path; the real file is not visible)"
		}
		if c.Optional {
			how += "; optional: skipped when the source does not exist"
		}
		if !profiles.Proxied(p.Network) && len(c.Hosts) > 0 {
			how += "; network " + p.Network + " has no proxy: never injected"
		}
		rows = append(rows, map[string]any{"name": c.Name, "env": c.Env, "file": c.File, "path": c.Path, "hosts": c.Hosts,
			"command": c.Command, "header": c.HeaderName(), "scheme": c.Scheme(), "optional": c.Optional, "where": c.Where, "injected": how})
	}
	return rows
}

// allowOf is what the session reaches under network: allowlist (the
// egress preset's entries, then the profile's own); the profile's own
// entries otherwise (Validate refuses them outside allowlist).
func allowOf(p *profiles.Profile) []string {
	allow, err := p.AllowList()
	if err != nil || p.Network != profiles.NetworkAllowlist {
		return p.Allow
	}
	return allow
}

// presetRow is the profile's egress preset for explain's JSON: its name,
// description, whether it is in force (network: allowlist) and its entries.
func presetRow(p *profiles.Profile) map[string]any {
	if p.Preset == "" {
		return nil
	}
	pr, err := profiles.LoadPreset(p.Preset)
	if err != nil {
		return map[string]any{"name": p.Preset, "error": err.Error()}
	}
	return map[string]any{"name": pr.Name, "description": pr.Description, "include": pr.Include, "allow": pr.Allow,
		"in_force": p.Network == profiles.NetworkAllowlist}
}

// presetWords is the preset's line: in force under allowlist, else how to
// switch to it and what it would reach.
func presetWords(p *profiles.Profile) string {
	pr, err := profiles.LoadPreset(p.Preset)
	if err != nil {
		return p.Preset + ": " + err.Error()
	}
	if p.Network == profiles.NetworkAllowlist {
		return fmt.Sprintf("%s (in force: %s; %d entries, listed under allow)", pr.Name, strings.TrimSuffix(pr.Description, "."), len(pr.Allow))
	}
	return fmt.Sprintf("%s (not in force; `network: allowlist` in a profile extending %s, or --network allowlist, reaches only: %s)", pr.Name, p.Name, strings.Join(pr.Allow, ", "))
}

func maskedSpecials(pl *mounts.Plan) int {
	n := 0
	for _, m := range pl.Mounts {
		if m.Kind == mounts.Masked && m.Why == mounts.WhySpecial {
			n++
		}
	}
	return n
}

func networkWords(p *profiles.Profile) string {
	switch p.Network {
	case profiles.NetworkPublic:
		return "public (own network namespace; any public address through fedmem-run's proxy; loopback, private, link-local, metadata and this host's addresses refused)"
	case profiles.NetworkAllowlist:
		return "allowlist (own network namespace; only the allow list, through fedmem-run's proxy)"
	case profiles.NetworkNone:
		return "none (own network namespace, loopback only)"
	case profiles.NetworkHost:
		return "host (the host's network: its loopback services and the cloud metadata endpoint are reachable)"
	}
	return p.Network
}

func limitWords(l profiles.Limits) string {
	var lim []string
	if l.WallTime > 0 {
		lim = append(lim, "wall_time="+time.Duration(l.WallTime).String())
	}
	for _, x := range []struct {
		k string
		v int64
	}{{"pids", int64(l.Pids)}, {"memory", int64(l.Memory)}, {"file_size", int64(l.FileSize)}, {"open_files", int64(l.OpenFiles)}, {"inbox_bytes", int64(l.InboxBytes)}} {
		if x.v > 0 {
			lim = append(lim, fmt.Sprintf("%s=%d", x.k, x.v))
		}
	}
	return strings.Join(lim, " ")
}
