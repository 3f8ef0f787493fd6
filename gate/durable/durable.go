// Package durable writes the gate's files so that a crash leaves the old
// content or the new, never a mix: WriteAtomic (temporary file, fsync,
// rename, fsync of the folder), WriteJSON and ReadJSON. Inside a pass's
// group commit the fsyncs are deferred: Defer hands the roots below which
// writes are remembered by a Syncer instead of synced one by one, and the
// group's barrier syncs them together (in parallel: the filesystem's
// journal turns them into few commits).
package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fedmem/fedmem/vault/atomicfile"
)

// Syncer remembers files and directories written without fsync.
type Syncer struct {
	mu    sync.Mutex
	files map[string]bool
	dirs  map[string]bool
}

func NewSyncer() *Syncer { return &Syncer{files: map[string]bool{}, dirs: map[string]bool{}} }

func (s *Syncer) Add(file string) {
	s.mu.Lock()
	s.files[file] = true
	s.dirs[filepath.Dir(file)] = true
	s.mu.Unlock()
}

func (s *Syncer) AddDir(dir string) {
	s.mu.Lock()
	s.dirs[dir] = true
	s.mu.Unlock()
}

// flush fsyncs every remembered file, then every directory, in parallel.
// A file removed since it was written is skipped (its removal is what the
// directory's fsync makes durable).
func (s *Syncer) Flush() error { return s.Take().Sync() }

// Set is what a Syncer held at one instant (take), synced later.
type Set struct{ files, dirs map[string]bool }

// take hands over every remembered path; later writes start a new set.
func (s *Syncer) Take() Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := Set{s.files, s.dirs}
	s.files, s.dirs = map[string]bool{}, map[string]bool{}
	return set
}

// sync fsyncs the set's files, then its directories.
func (set Set) Sync() error {
	for _, m := range []map[string]bool{set.files, set.dirs} {
		if err := FsyncAll(m); err != nil {
			return err
		}
	}
	return nil
}

func FsyncAll(set map[string]bool) error {
	if len(set) == 0 {
		return nil
	}
	ch := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	workers := min(32, len(set))
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				f, err := os.Open(p)
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err == nil {
					err = f.Sync()
					f.Close()
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("fsync %s: %w", p, err))
					mu.Unlock()
				}
			}
		}()
	}
	for p := range set {
		ch <- p
	}
	close(ch)
	wg.Wait()
	return errors.Join(errs...)
}

// deferred maps a directory to the Syncer that takes over the fsyncs of
// WriteAtomic below it (the gate's state and the vault's work tree during
// a pass). Keyed by directory, so gates of other vaults in the same process
// are not affected.
var deferred = newByRoot[*Syncer]()

// byRoot maps folders to what takes over the writes below them (a
// Syncer, a Pool of spare files), keyed by folder so that gates of other
// vaults in the same process are not affected.
type byRoot[T comparable] struct {
	sync.RWMutex
	m map[string]T
}

func newByRoot[T comparable]() *byRoot[T] { return &byRoot[T]{m: map[string]T{}} }

// use hands every root to v.
func (r *byRoot[T]) use(roots []string, v T) {
	r.Lock()
	for _, root := range roots {
		r.m[root] = v
	}
	r.Unlock()
}

// drop ends use for the roots still handed to v.
func (r *byRoot[T]) drop(roots []string, v T) {
	r.Lock()
	for _, root := range roots {
		if r.m[root] == v {
			delete(r.m, root)
		}
	}
	r.Unlock()
}

// at is what takes path's writes (the zero T when nothing does).
func (r *byRoot[T]) at(path string) (v T) {
	r.RLock()
	defer r.RUnlock()
	for root, x := range r.m {
		if path == root || strings.HasPrefix(path, root+string(filepath.Separator)) {
			return x
		}
	}
	return v
}

// LazyFor returns the Syncer for path, or nil when path must be synced
// as it is written.
func LazyFor(path string) *Syncer {
	return deferred.at(path)
}

// WriteAtomic writes b to path via a temporary file, fsync and rename.
func WriteAtomic(path string, b []byte, mode os.FileMode) error {
	return WriteAtomicVia(filepath.Dir(path), path, b, mode)
}

// WriteAtomicVia is WriteAtomic with the temporary file in tmpDir (same
// filesystem), so a crash leaves no stray file next to path.
func WriteAtomicVia(tmpDir, path string, b []byte, mode os.FileMode) error {
	// In a pass's group mode the fsyncs are taken together at its next
	// barrier (gate/commit/groupcommit.go).
	sp := spareSource(path) // spares.go
	if lazy := LazyFor(path); lazy != nil {
		return atomicfile.WriteSpare(sp, tmpDir, path, b, mode, lazy)
	}
	return atomicfile.WriteSpare(sp, tmpDir, path, b, mode, nil)
}

// SyncDir fsyncs a folder: what makes a rename or an unlink in it durable.
func SyncDir(dir string) error { return atomicfile.SyncDir(dir) }

func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(path, append(b, '\n'), 0o600)
}

func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Defer makes the writes below each of roots remembered by s instead of
// synced (a pass's group mode); Undefer ends it.
func Defer(roots []string, s *Syncer) { deferred.use(roots, s) }

// Undefer ends Defer for the roots still handed to s.
func Undefer(roots []string, s *Syncer) { deferred.drop(roots, s) }

// Intent is the journal of one durable move in progress, a JSON file in
// the gate's state dir: Record writes it (synced, or at the group's
// barrier below a deferred root) before the move's first step; a gate
// killed during the move finds it with Load when it next runs and
// finishes or drops the move; Done removes it once the move is whole.
// The gate's moves that span more than one file (a withhold, restore or
// policy edit: sweep.intent; a sync's branch move: sync.intent; a group's
// checkout: checkout.json) each keep one.
type Intent string

// Record writes v as the intent.
func (in Intent) Record(v any) error { return WriteJSON(string(in), v) }

// Load reads the intent into v; false (and no error) when there is none.
func (in Intent) Load(v any) (bool, error) {
	err := ReadJSON(string(in), v)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Done removes the intent: the move is whole.
func (in Intent) Done() error { return os.Remove(string(in)) }
