package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/ledger"
)

// Claim journal (issue 9). A claim record must be on disk before its draft
// is moved into claims/ (a gate killed between the two steps must know
// whose draft it holds). It used to be a file per claim, claims/ID.json:
// on this machine's ext4 a new inode costs about a millisecond (its
// allocator skips recently deleted inodes), more than the rest of a held
// draft's claim. A pass now appends its claim records, one JSON line each,
// to one journal, claims/J-<id>.jsonl, with one write(2) per record, before
// the draft's rename.
//
//   - A claim is live while claims/ID.draft exists: the record of a draft
//     that is gone (decided and cleaned up, returned to its session, or
//     never moved because the rename failed) is dead and ignored.
//   - A gate killed while appending leaves at most one partial line, the
//     journal's last, whose draft was never moved: lines that do not parse
//     are skipped.
//   - A journal none of whose claims is live is removed (at the next
//     pass's start, and at the end of the pass that wrote it).
//
// Records of older gates (claims/ID.json) are still read and removed with
// their draft.

const (
	journalPrefix = "J-"
	journalSuffix = ".jsonl"
)

func isJournal(name string) bool {
	return strings.HasPrefix(name, journalPrefix) && strings.HasSuffix(name, journalSuffix)
}

// journalClaim appends c's record to the pass's claim journal, opening one
// at the pass's first claim. In a pass the fsync is taken at the barrier.
func (g *Gate) journalClaim(c Claim) error {
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if g.journal == nil {
		p := g.statePath(claimsDir, journalPrefix+ledger.NewID(g.now())+journalSuffix)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("claim journal: %w", err)
		}
		g.journal = f
	}
	// One write(2): O_APPEND puts the line after the last one whole.
	if _, err := g.journal.Write(line); err != nil {
		return fmt.Errorf("claim journal %s: %w", g.journal.Name(), err)
	}
	// A claim taken in after openClaims (a pass's intake) is decided by
	// the same pass.
	g.recMu.Lock()
	if g.claimRecs == nil {
		g.claimRecs = map[string]Claim{}
	}
	g.claimRecs[c.ID] = c
	g.recMu.Unlock()
	if lz := durable.LazyFor(g.journal.Name()); lz != nil {
		lz.Add(g.journal.Name())
		return nil
	}
	if err := g.journal.Sync(); err != nil {
		return err
	}
	return durable.SyncDir(g.statePath(claimsDir))
}

// closeJournal ends the pass's claim journal (its file stays while one of
// its claims is live).
func (g *Gate) closeJournal() {
	if g.journal != nil {
		g.journal.Close()
		g.journal = nil
	}
}

// readJournal returns the records of one claim journal, skipping lines
// that do not parse (the partial last line of a killed gate).
func readJournal(path string) ([]Claim, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Claim
	for len(b) > 0 {
		line := b
		i := bytes.IndexByte(b, '\n')
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		var c Claim
		if json.Unmarshal(line, &c) != nil || !ledger.ValidID(c.ID) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// loadJournals reads every claim journal in claims/ (names lists the
// folder), returns the records of live claims (live reports whether a
// claim's draft is there) and removes the journals with none, except the
// pass's open journal.
func (g *Gate) loadJournals(names []string, live func(id string) bool) (map[string]Claim, error) {
	recs := map[string]Claim{}
	for _, n := range names {
		if !isJournal(n) {
			continue
		}
		p := g.statePath(claimsDir, n)
		cs, err := readJournal(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claim journal: %w", err)
		}
		used := false
		for _, c := range cs {
			if live(c.ID) {
				recs[c.ID] = c
				used = true
			}
		}
		if !used && (g.journal == nil || g.journal.Name() != p) {
			os.Remove(p)
		}
	}
	return recs, nil
}

// dropDeadJournals removes the journals none of whose claims is live any
// more (the end of a pass: every claim it decided is cleaned up).
func (g *Gate) dropDeadJournals() error {
	g.closeJournal()
	ents, err := os.ReadDir(g.statePath(claimsDir))
	if err != nil {
		return err
	}
	have := map[string]bool{}
	var names []string
	for _, e := range ents {
		have[e.Name()] = true
		names = append(names, e.Name())
	}
	_, err = g.loadJournals(names, func(id string) bool { return have[id+".draft"] })
	return err
}

// claimRecord returns the record of claim id: from a journal, else an
// older gate's claims/ID.json.
func (g *Gate) claimRecord(id string) (Claim, error) {
	g.recMu.Lock()
	c, ok := g.claimRecs[id]
	g.recMu.Unlock()
	if ok {
		return c, nil
	}
	if err := durable.ReadJSON(g.statePath(claimsDir, id+".json"), &c); err != nil {
		return Claim{}, err
	}
	c.legacy = true
	return c, nil
}
