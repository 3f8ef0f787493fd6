package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() {
	subcommands = append(subcommands, newManCmd)
}

// newManCmd is `fedmem man DIR` (hidden): the man pages of every command,
// generated from the command tree itself (cobra's generator: each page has
// the command's description, options, inherited options and examples), so
// the pages cannot drift from the help text. make dist writes them.
func newManCmd() *cobra.Command {
	var launcher string
	c := &cobra.Command{
		Use:    "man DIR [--launcher PATH]",
		Short:  "Write a man page for every fedmem command into DIR (and fedmem-run's, from its --help)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := os.MkdirAll(a[0], 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			hdr := &doc.GenManHeader{Title: "FEDMEM", Section: "1", Source: "fedmem " + buildVersion(), Manual: "fedmem manual"}
			if err := doc.GenManTree(root, hdr, a[0]); err != nil {
				return err
			}
			// `fedmem run` would be fedmem-run.1, the launcher's own page
			// (packaging/man/fedmem-run.1, which documents it).
			if err := os.Remove(filepath.Join(a[0], "fedmem-run.1")); err != nil && !os.IsNotExist(err) {
				return err
			}
			if launcher != "" {
				help, err := exec.Command(launcher, "--help").Output()
				if err != nil {
					return fmt.Errorf("%s --help: %w", launcher, err)
				}
				ver, _ := exec.Command(launcher, "--version").Output()
				page, err := launcherPage(string(help), strings.TrimPrefix(strings.TrimSpace(string(ver)), "fedmem-run "))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(a[0], "fedmem-run.1"), []byte(page), 0o644); err != nil {
					return err
				}
			}
			ents, _ := os.ReadDir(a[0])
			fmt.Fprintf(cmd.OutOrStdout(), "%d man pages in %s\n", len(ents), a[0])
			return nil
		},
	}
	c.Flags().StringVar(&launcher, "launcher", "", "fedmem-run binary whose --help becomes fedmem-run.1")
	return c
}

// launcherPage renders fedmem-run's man page from its own --help (the
// launcher parses flags with the standard library, not cobra: its help is
// the one description of its flags). help is what `fedmem-run --help`
// printed: a Usage line, paragraphs (one starting "Exit status:"), then
// "Flags" and the flag package's two-line entries.
func launcherPage(help, version string) (string, error) {
	lines := strings.Split(strings.TrimRight(help, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Usage: ") {
		return "", fmt.Errorf("fedmem-run --help does not start with a Usage line: %q", firstLineOf(help))
	}
	var b strings.Builder
	fmt.Fprintf(&b, ".TH \"FEDMEM-RUN\" \"1\" \"\" \"fedmem-run %s\" \"fedmem manual\"\n", roff(version))
	b.WriteString(".SH NAME\nfedmem\\-run \\- run an untrusted agent with the memory vault read\\-only\n")
	fmt.Fprintf(&b, ".SH SYNOPSIS\n\\fB%s\\fP\n", roff(strings.TrimPrefix(lines[0], "Usage: ")))
	section := ".SH DESCRIPTION\n"
	i := 1
	var para []string
	flushPara := func() {
		if len(para) == 0 {
			return
		}
		text := strings.Join(para, " ")
		if rest, ok := strings.CutPrefix(text, "Exit status: "); ok {
			b.WriteString(".SH EXIT STATUS\n" + roff(rest) + "\n")
			section = ".SH DESCRIPTION\n"
		} else {
			b.WriteString(section + ".PP\n" + roff(text) + "\n")
			section = ""
		}
		para = nil
	}
	for ; i < len(lines) && !strings.HasPrefix(lines[i], "Flags"); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			flushPara()
			continue
		}
		para = append(para, strings.TrimSpace(lines[i]))
	}
	flushPara()
	if i == len(lines) {
		return "", fmt.Errorf("fedmem-run --help lists no flags")
	}
	b.WriteString(".SH OPTIONS\n")
	n := 0
	for i++; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "  -") {
			continue
		}
		name, arg, _ := strings.Cut(strings.TrimPrefix(l, "  -"), " ")
		var usage []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    \t") {
			i++
			usage = append(usage, strings.TrimSpace(lines[i]))
		}
		head := "\\fB\\-\\-" + roff(name) + "\\fP"
		if arg != "" {
			head += " \\fI" + roff(strings.ToUpper(arg)) + "\\fP"
		}
		fmt.Fprintf(&b, ".TP\n%s\n%s\n", head, roff(strings.Join(usage, " ")))
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("fedmem-run --help lists no flags")
	}
	b.WriteString(".SH ENVIRONMENT\n\\fBFEDMEM_VAULT\\fP (default vault), \\fBFEDMEM_PROFILE\\fP (default profile), \\fBFEDMEM_FS_DENIALS\\fP.\n")
	b.WriteString(".SH SEE ALSO\n.BR fedmem (1),\n.BR fedmem\\-doctor (1)\n")
	return b.String(), nil
}

// roff escapes text for a man page: backslashes, hyphens (so they stay
// hyphens), and a leading dot or quote.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
