package mounts

import (
	"github.com/fedmem/fedmem/mounts/families"

	"github.com/fedmem/fedmem/mounts/request"
)

// Pattern and PatternSet are the persistence families' compiled name
// patterns (families.ProjectFamilies, families.InstructionFiles), as a
// backend's walk after the session matches them: the Plan says which set
// applies (PersistencePatterns), the backend does not read the profile.
type (
	Pattern    = families.Pattern
	PatternSet = families.PatternSet
)

// RiskKeepGroups is the accept_risks name (Plan.AcceptRisks) that lets an
// unprivileged caller's agent keep its supplementary groups.
const RiskKeepGroups = request.RiskKeepGroups

// PersistencePatterns are the name patterns the walk after the session
// holds a plan's writable roots to: fams, the persistence families (with
// the instruction files when the profile says `instructions: read-only`),
// and instr, the instruction files on their own when they are not a family
// (nil when they are).
func (pl *Plan) PersistencePatterns() (fams, instr *PatternSet) {
	fams = families.ProjectPatterns(pl.InstructionsReadOnly)
	if !pl.InstructionsReadOnly {
		instr = families.InstructionPatterns()
	}
	return fams, instr
}
