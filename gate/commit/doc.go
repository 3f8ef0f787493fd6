// Package commit is how the gate writes the vault's branch: a draft's
// promotion commit (Promote) with its folder pages (ChangeSet), the
// adoption of a commit a killed gate made (AdoptEarlierCommit), a pass's
// group commit (BeginPass … EndPass: barriers, one pack, one branch move,
// the decisions recorded after it), the decisions recorded off the pass's
// goroutine (RecordAsync) and the checkout journal that repairs a kill
// between a branch move and the index write (RecoverCheckout). The
// engine holds the repository, the audit log and the committing/ markers;
// the gate's decision records, receipts and claims stay the gate's, handed
// in as closures, and its commit identity and crash-test hook come
// through Host.
package commit
