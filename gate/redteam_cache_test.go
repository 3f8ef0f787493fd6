package gate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/test/testutil"
)

// Red team of the gate's CPU shortcuts (rawObj shared bytes, two-generation
// tree cache, the added-lines append shortcut, the folder index that follows
// trees by difference, pages grown in place, the changeset's HEAD reads).

// rtFolderFacts reads every direct note of folder at HEAD with git itself
// (not the gate's caches): path -> facts.
func rtFolderFacts(t *testing.T, v, folder string) map[string]decide.NoteFacts {
	t.Helper()
	out := map[string]decide.NoteFacts{}
	ls := gitCLI(t, v, "ls-tree", "HEAD", folder+"/")
	for _, l := range strings.Split(strings.TrimSpace(ls), "\n") {
		tab := strings.IndexByte(l, '\t')
		if tab < 0 {
			continue
		}
		f := strings.Fields(l[:tab])
		p := l[tab+1:]
		if len(f) != 3 || f[1] != "blob" || !strings.HasSuffix(p, ".md") || strings.HasSuffix(p, "/index.md") || strings.HasSuffix(p, "/log.md") {
			continue
		}
		out[p] = decide.FactsOf([]byte(gitCLI(t, v, "cat-file", "blob", f[2])))
	}
	return out
}

// rtPageCount counts the lines of a folder's page and its archives (read
// by git at HEAD) that contain s.
func rtPageCount(t *testing.T, v, folder, kind, s string) int {
	t.Helper()
	n := 0
	ls := gitCLI(t, v, "ls-tree", "-r", "--name-only", "HEAD", folder+"/")
	for _, p := range strings.Split(strings.TrimSpace(ls), "\n") {
		if p != folder+"/"+kind+".md" && !strings.HasPrefix(p, folder+"/"+kind+"/") {
			continue
		}
		for _, l := range strings.Split(gitCLI(t, v, "show", "HEAD:"+p), "\n") {
			// (archive pages sit one folder down: "](../x.md)")
			if strings.Contains(strings.ReplaceAll(l, "](../", "]("), s) {
				n++
			}
		}
	}
	return n
}

// Attack: many passes, each a few small groups, a human commit between
// passes that retitles, deprecates, removes notes, puts a folder (or a
// note) where a note (a folder) was, and rewrites log.md/index.md without a
// final newline or with CRLF; drafts reuse a few titles and subjects (case
// and spacing variants). After every pass, checked with git (no gate
// cache): no note promoted in the pass has an in-force twin (title or
// subject) in its folder; each promotion has exactly one log line and one
// index entry; every draft has one decision; fsck and a clean work tree.
func TestRedteamCacheConflictsAcrossGroupsAndHumanCommits(t *testing.T) {
	rng := testutil.Seed(t)
	setGroupMax(t, 2+rng.Intn(3))
	v := trustVault(t)
	const folder = "20-domains"
	names := []string{"Deploy region", "Rotation", "Owner", "Cache policy", "Retry budget"}
	variant := func(s string) string {
		switch rng.Intn(3) {
		case 0:
			return strings.ToUpper(s)
		case 1:
			return strings.ReplaceAll(s, " ", "  ")
		}
		return s
	}
	humanCommit(t, v, map[string]string{folder + "/seed.md": "---\ntype: Fact\ntitle: Seed\n---\nseed\n"})
	g := openGate(t, v)
	sd := session(t, v, "rt")
	seq := 0
	for round := 0; round < 8; round++ {
		// The human's commit between passes.
		files := map[string]string{}
		touched := map[string]bool{}
		for k := 0; k < 1+rng.Intn(3); k++ {
			name := fmt.Sprintf("h%d.md", rng.Intn(6))
			if touched[name] {
				continue
			}
			touched[name] = true
			full := filepath.Join(v, folder, name)
			st, err := os.Lstat(full)
			switch op := rng.Intn(6); {
			case op == 0 && err == nil: // remove (note or folder)
				gitCLI(t, v, "rm", "-q", "-r", "-f", "--", folder+"/"+name)
			case op == 1 && err == nil && !st.IsDir(): // a folder in the note's place
				gitCLI(t, v, "rm", "-q", "-f", "--", folder+"/"+name)
				files[folder+"/"+name+"/inner.md"] = "---\ntype: Fact\ntitle: " + names[rng.Intn(len(names))] + "\n---\nx\n"
			case op == 2: // deprecated
				if err == nil && st.IsDir() {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--", folder+"/"+name)
				}
				files[folder+"/"+name] = "---\ntype: Fact\nstatus: deprecated\ntitle: " + names[rng.Intn(len(names))] + "\n---\nold\n"
			case op == 3: // the pages, rewritten by hand
				for _, pg := range []string{"log.md", "index.md"} {
					b, err := os.ReadFile(filepath.Join(v, folder, pg))
					if err != nil {
						continue
					}
					switch rng.Intn(3) {
					case 0:
						b = bytes.TrimRight(b, "\n")
					case 1:
						b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
					default:
						b = append(b, "hand-written, no newline"...)
					}
					files[folder+"/"+pg] = string(b)
				}
			default: // a note in force (retitled when it exists), maybe by subject
				if err == nil && st.IsDir() {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--", folder+"/"+name)
				}
				key := "title"
				if rng.Intn(3) == 0 {
					key = "subject"
				}
				files[folder+"/"+name] = "---\ntype: Fact\n" + key + ": " + names[rng.Intn(len(names))] + "\n---\nhuman\n"
			}
		}
		files["human-round.txt"] = fmt.Sprint(round) // never an empty commit
		humanCommit(t, v, files)
		// The agent's drafts.
		want := map[string]bool{}
		for k := 0; k < 2+rng.Intn(7); k++ {
			seq++
			dn := fmt.Sprintf("d%03d.md", seq)
			key := "title"
			if rng.Intn(4) == 0 {
				key = "subject"
			}
			nm := names[rng.Intn(len(names))]
			if rng.Intn(5) == 0 {
				nm = fmt.Sprintf("Unique %d", seq)
			}
			put(t, sd, dn, "---\ntype: Fact\n"+key+": "+variant(nm)+"\nsources: [10-projects/src.md]\n---\nDraft "+dn+".\n")
			want[dn] = true
		}
		s := once(t, g)
		if !s.Handled() {
			t.Fatalf("round %d: not every draft decided: %+v", round, s)
		}
		t.Logf("round %d: promoted %d, pending %d, rejected %d", round, s.Promoted, s.Pending, s.Rejected)
		got := map[string]int{}
		for _, d := range s.Decisions {
			got[d.Draft]++
		}
		for dn := range want {
			if got[dn] != 1 {
				t.Errorf("round %d: %s has %d decisions", round, dn, got[dn])
			}
		}
		facts := rtFolderFacts(t, v, folder)
		for _, d := range s.Decisions {
			if d.State != StatePromoted {
				continue
			}
			fp, ok := facts[d.Path]
			if !ok {
				t.Errorf("round %d: %s promoted to %s, not a note at HEAD", round, d.Draft, d.Path)
				continue
			}
			mine := []string{fp.Title, fp.Subject}
			for q, fq := range facts {
				if q == d.Path || !fq.InForce {
					continue
				}
				for _, a := range mine {
					if a != "" && (a == fq.Title || a == fq.Subject) {
						t.Errorf("BREACH round %d: %s promoted to %s with %q while %s (in force) has it", round, d.Draft, d.Path, a, q)
					}
				}
			}
			base := filepath.Base(d.Path)
			if n := rtPageCount(t, v, folder, "log", "promoted ["); n == 0 {
				t.Errorf("round %d: no promoted lines in the log", round)
			}
			if n := rtPageCount(t, v, folder, "log", "]("+base+") from session"); n != 1 {
				t.Errorf("round %d: %s has %d log lines", round, d.Path, n)
			}
			if n := rtPageCount(t, v, folder, "index", "]("+base+")"); n != 1 {
				t.Errorf("round %d: %s has %d index entries", round, d.Path, n)
			}
		}
		checkRepo(t, v)
		rtSharedBytesIntact(t, g)
	}
}

// Attack: the folder indexes and page buffers are process-wide, keyed by
// folder or page path, not by repository. Two gates on two vaults with the
// same folders run their passes at the same time (as a test binary, or a
// host serving two vaults, would): vault A holds an in-force "Deploy
// region" note, vault B none. Each vault's drafts must be judged against
// its own notes only: in A every "Deploy region" draft is held, in B
// exactly one promotes; each vault's log.md names only its own notes.
func TestRedteamCacheTwoVaultsShareNoIndex(t *testing.T) {
	setGroupMax(t, 2)
	va, vb := trustVault(t), trustVault(t)
	humanCommit(t, va, map[string]string{"20-domains/region.md": "---\ntype: Fact\ntitle: Deploy region\n---\neu-west-1\n"})
	humanCommit(t, vb, map[string]string{"20-domains/other.md": "---\ntype: Fact\ntitle: Other\n---\nx\n"})
	ga, gb := openGate(t, va), openGate(t, vb)
	sa, sb := session(t, va, "rt"), session(t, vb, "rt")
	type res struct {
		s   []*Summary
		err error
	}
	run := func(g *Gate, sd, tag string, ch chan<- res) {
		var r res
		for round := 0; round < 4; round++ {
			for k := 0; k < 3; k++ {
				title := "Deploy region"
				if k == 1 {
					title = fmt.Sprintf("%s note %d", tag, round)
				}
				b := "---\ntype: Fact\ntitle: " + title + "\nsources: [10-projects/src.md]\n---\n" + tag + fmt.Sprint(round, k) + "\n"
				if err := os.WriteFile(filepath.Join(sd, fmt.Sprintf("%s-%d-%d.md", tag, round, k)), []byte(b), 0o644); err != nil {
					r.err = err
					ch <- r
					return
				}
			}
			s, err := g.Once()
			if err != nil {
				r.err = err
				break
			}
			r.s = append(r.s, s)
		}
		ch <- r
	}
	ca, cb := make(chan res, 1), make(chan res, 1)
	go run(ga, sa, "a", ca)
	go run(gb, sb, "b", cb)
	ra, rb := <-ca, <-cb
	if ra.err != nil || rb.err != nil {
		t.Fatalf("passes: %v / %v", ra.err, rb.err)
	}
	count := func(rs []*Summary) (region int, all int) {
		for _, s := range rs {
			for _, d := range s.Decisions {
				if d.State != StatePromoted {
					continue
				}
				all++
				if strings.Contains(d.Path, "deploy-region") {
					region++
				}
			}
		}
		return
	}
	if n, _ := count(ra.s); n != 0 {
		t.Errorf("BREACH vault A: %d drafts titled like its note in force promoted", n)
	}
	if n, _ := count(rb.s); n != 1 {
		t.Errorf("vault B: %d \"Deploy region\" drafts promoted, want exactly 1", n)
	}
	for _, c := range []struct {
		v, own, other string
	}{{va, "a note", "b note"}, {vb, "b note", "a note"}} {
		log := gitCLI(t, c.v, "show", "HEAD:20-domains/log.md")
		if strings.Contains(log, c.other) || !strings.Contains(log, c.own) {
			t.Errorf("BREACH %s/20-domains/log.md mixes the vaults' pages:\n%s", c.v, log)
		}
		checkRepo(t, c.v)
	}
	rtSharedBytesIntact(t, ga)
	rtSharedBytesIntact(t, gb)
}

// Attack: the user commits to the vault while a group is being published
// (after its pack is written, before the branch moves): the group's
// compare-and-swap fails and the group is dropped; the caches (trees,
// folder index, page buffers) saw the dropped group's trees and pages. The
// human's commit puts a note in force titled like the group's drafts. The
// next pass must judge the drafts again at the new HEAD: none of them may
// promote next to the human's note, log.md keeps the human's line, no
// draft loses or doubles its decision.
func TestRedteamCacheHumanCommitDropsGroup(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"20-domains/seed.md": "---\ntype: Fact\ntitle: Seed\n---\nseed\n"})
	g := openGate(t, v)
	sd := session(t, v, "rt")
	old := groupFault
	defer func() { groupFault = old }()
	fired := false
	groupFault = func(p string) {
		if p != "packed" || fired {
			return
		}
		fired = true
		b, _ := os.ReadFile(filepath.Join(v, "20-domains", "log.md"))
		humanCommit(t, v, map[string]string{
			"20-domains/human-region.md": "---\ntype: Fact\ntitle: Deploy region\n---\nus-east-1 (human)\n",
			"20-domains/log.md":          string(b) + "- the human's own line\n",
		})
	}
	put(t, sd, "r1.md", "---\ntype: Fact\ntitle: Deploy region\nsources: [10-projects/src.md]\n---\neu-west-1\n")
	put(t, sd, "u1.md", "---\ntype: Fact\ntitle: Unrelated one\nsources: [10-projects/src.md]\n---\nx\n")
	s1, err := g.Once()
	if !fired {
		t.Fatal("the group was never published: the test does not exercise a dropped group")
	}
	t.Logf("pass 1: err %v, summary %+v", err, s1)
	put(t, sd, "r2.md", "---\ntype: Fact\nsubject: deploy  REGION\nsources: [10-projects/src.md]\n---\neu-west-2\n")
	s2 := once(t, g)
	s3 := once(t, g)
	decided := map[string][]Decision{}
	for _, s := range []*Summary{s1, s2, s3} {
		if s == nil {
			continue
		}
		for _, d := range s.Decisions {
			if d.State != "" {
				decided[d.Draft] = append(decided[d.Draft], d)
			}
		}
	}
	for _, n := range []string{"r1.md", "r2.md", "u1.md"} {
		final := ""
		for _, d := range decided[n] {
			final = d.State
			if d.State == StatePromoted && n != "u1.md" {
				t.Errorf("BREACH %s promoted to %s beside the human's note in force", n, d.Path)
			}
		}
		if final == "" {
			t.Errorf("%s has no decision after three passes: %+v", n, decided[n])
		}
	}
	facts := rtFolderFacts(t, v, "20-domains")
	inForce := 0
	for p, f := range facts {
		if f.InForce && (f.Title == "deploy region" || f.Subject == "deploy region") {
			inForce++
			t.Logf("in force: %s", p)
		}
	}
	if inForce != 1 {
		t.Errorf("BREACH %d notes in force say \"deploy region\"", inForce)
	}
	log := gitCLI(t, v, "show", "HEAD:20-domains/log.md")
	if !strings.Contains(log, "the human's own line") {
		t.Errorf("BREACH the human's log line was lost:\n%s", log)
	}
	if strings.Count(log, "](unrelated-one") > 1 {
		t.Errorf("u1 logged twice:\n%s", log)
	}
	checkRepo(t, v)
	rtSharedBytesIntact(t, g)
}

// Attack: log.md and index.md roll into their archives in the middle of a
// group whose earlier promotions grew the same pages in place (and the
// human's page does not end in a newline). Every human line and every
// promotion's line is kept exactly once across the page and its archives,
// and what each commit wrote is what git reads back.
func TestRedteamCacheRolloverInsideGroup(t *testing.T) {
	setGroupMax(t, 3)
	v := trustVault(t)
	var lg, ix strings.Builder
	lg.WriteString(commit.LogHeader)
	ix.WriteString(commit.IndexHeader)
	var human []string
	for i := 0; lg.Len() < commit.PageCap-400; i++ {
		l := fmt.Sprintf("- 2026-01-01T00:00:00Z promoted [Human %d](human-%d.md) from session s by the gate (draft sha256 0123456789ab)", i, i)
		lg.WriteString(l + "\n")
		human = append(human, l)
	}
	for i := 0; ix.Len() < commit.PageCap-150; i++ {
		fmt.Fprintf(&ix, "- [Human %d](human-%d.md)\n", i, i)
	}
	humanCommit(t, v, map[string]string{
		"20-domains/log.md":   strings.TrimSuffix(lg.String(), "\n"),
		"20-domains/index.md": ix.String(),
	})
	g := openGate(t, v)
	sd := session(t, v, "rt")
	var promoted []Decision
	for round := 0; round < 3; round++ {
		for k := 0; k < 7; k++ {
			put(t, sd, fmt.Sprintf("p%d-%d.md", round, k), fmt.Sprintf("---\ntype: Fact\ntitle: Rolled %d %d\nsources: [10-projects/src.md]\n---\nx\n", round, k))
		}
		s := once(t, g)
		for _, d := range s.Decisions {
			if d.State == StatePromoted {
				promoted = append(promoted, d)
			} else {
				t.Errorf("%s: %s %v", d.Draft, d.State, d.Reasons)
			}
		}
		checkRepo(t, v)
		rtSharedBytesIntact(t, g)
	}
	if len(promoted) != 21 {
		t.Fatalf("%d promoted, want 21", len(promoted))
	}
	if ls := gitCLI(t, v, "ls-tree", "--name-only", "HEAD", "20-domains/log/"); !strings.Contains(ls, "000001.md") {
		t.Fatalf("log.md never rolled over: the test does not exercise the archive:\n%s", ls)
	}
	for _, l := range []string{human[0], human[len(human)/2], human[len(human)-1]} {
		key := l[strings.Index(l, "[") : strings.Index(l, ")")+1]
		if n := rtPageCount(t, v, "20-domains", "log", key[:strings.Index(key, "(")]); n != 1 {
			t.Errorf("BREACH the human's log line %q is there %d times", key, n)
		}
	}
	for _, d := range promoted {
		base := filepath.Base(d.Path)
		if n := rtPageCount(t, v, "20-domains", "log", "("+base+") from session"); n != 1 {
			t.Errorf("BREACH %s has %d log lines", d.Path, n)
		}
		if n := rtPageCount(t, v, "20-domains", "index", "("+base+")"); n != 1 {
			t.Errorf("BREACH %s has %d index entries", d.Path, n)
		}
	}
}

// Attack: a reviewer's approval (outside any group: loose objects, the
// branch moved at once) grows log.md from the page the last group left in
// memory, between passes whose groups grow it again; one approval is of a
// draft held for the title a promoted note has. Every promotion has one
// log line and one index entry, and fsck reads back what was committed.
func TestRedteamCacheApprovalBetweenGroups(t *testing.T) {
	setGroupMax(t, 2)
	v := trustVault(t)
	g := openGate(t, v)
	sd := session(t, v, "rt")
	var promoted []string
	for round := 0; round < 4; round++ {
		for k := 0; k < 3; k++ {
			title := fmt.Sprintf("Approval %d %d", round, k)
			if k == 2 {
				title = "Shared title"
			}
			put(t, sd, fmt.Sprintf("a%d-%d.md", round, k), "---\ntype: Fact\ntitle: "+title+"\nsources: [10-projects/src.md]\n---\nr"+fmt.Sprint(round, k)+"\n")
		}
		s := once(t, g)
		for _, d := range s.Decisions {
			switch d.State {
			case StatePromoted:
				promoted = append(promoted, d.Path)
			case StatePending:
				// (held for the shared title: the reviewer supersedes
				// the note in force, conflicts.go)
				ad, err := g.ApproveWith(d.ID, "alice", review.ApproveOptions{Supersede: true})
				if err != nil {
					t.Fatalf("approve %s: %v", d.Draft, err)
				}
				if ad.State != StatePromoted {
					t.Fatalf("approve %s: %s", d.Draft, ad.State)
				}
				promoted = append(promoted, ad.Path)
			}
		}
		checkRepo(t, v)
		rtSharedBytesIntact(t, g)
	}
	if len(promoted) != 12 {
		t.Fatalf("%d promoted, want 12", len(promoted))
	}
	for _, p := range promoted {
		base := filepath.Base(p)
		if n := rtPageCount(t, v, "20-domains", "log", "("+base+") from session"); n != 1 {
			t.Errorf("BREACH %s has %d log lines", p, n)
		}
		if n := rtPageCount(t, v, "20-domains", "index", "("+base+")"); n != 1 {
			t.Errorf("BREACH %s has %d index entries", p, n)
		}
	}
}

// rtSharedBytesIntact checks every object the gate holds in memory with
// shared bytes (the raw tree cache, both generations; the recent objects
// of its packs; the open group's objects; the page buffers' handed-out
// versions are checked through them): each still hashes to its id, so no
// reader changed what it was lent after the object was made.
func rtSharedBytesIntact(t *testing.T, g *Gate) {
	t.Helper()
	for _, breach := range g.repo.SharedBytesBreaches() {
		t.Error(breach)
	}
}

// setGroupMax makes the gate's groups n drafts at most for the test.
func setGroupMax(t *testing.T, n int) {
	old := groupMaxDrafts
	groupMaxDrafts = n
	t.Cleanup(func() { groupMaxDrafts = old })
}
