// Package sweep withholds the notes in force whose `stale_after` passed or
// whose fingerprinted sources changed at HEAD, and restores one on reverify
// when its sources match again and its verifiers pass. Every move is one
// gate commit recorded first in an intent file (Commit, Finish), which the
// gate's policy edits use too. The engine holds no gate state: the audit
// log, the folder pages, the commit signature and the inbox are the Host's.
package sweep
