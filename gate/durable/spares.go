package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fedmem/fedmem/vault/atomicfile"
)

// Spare inodes (issue 24). Each decided draft costs the gate about three
// new files (its decision record, its receipt, and its pending copy or the
// promoted note in the work tree), and on a busy ext4 a new inode costs
// about a millisecond of the kernel's, most of a promotion. A running gate
// (`gate run`) makes empty files ahead of time, while it is idle, in the
// state dir's spare/ folder; a write during a pass takes one, writes into
// it and renames it into place, as it would a new temporary file — same
// bytes, same mode, same order and fsyncs, at a tenth of the cost. Without
// a spare (none made, or a burst used them all) a write makes its
// temporary file as before.
//
// A spare is only taken when it is still what the pool made: a regular
// file of the gate's, empty, with one link (a crash during a write leaves
// a written spare, which is removed, never renamed into place).

// SparePrefix begins every spare's name in the pool's folder.
const SparePrefix = "s-"

// Pool is the folder of spare files and the names in it.
type Pool struct {
	dir    string
	prefix string
	mu     sync.Mutex
	names  []string
	seq    uint64
}

// OpenPool lists the spares already in dir (made by an earlier gate).
func OpenPool(dir string) (*Pool, error) {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return nil, err
	}
	p := &Pool{dir: dir, prefix: SparePrefix + hex.EncodeToString(r[:]) + "-"}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), SparePrefix) {
			p.names = append(p.names, e.Name())
		}
	}
	return p, nil
}

// Len is the number of spares in the pool.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.names)
}

// Take returns a spare open for writing, and its path; nil when the pool
// is empty. A file in the pool that is not an empty regular file of the
// gate's with one link is removed and the next one tried.
func (p *Pool) Take() (*os.File, string) {
	for {
		p.mu.Lock()
		n := len(p.names)
		if n == 0 {
			p.mu.Unlock()
			return nil, ""
		}
		name := p.names[n-1]
		p.names = p.names[:n-1]
		p.mu.Unlock()
		path := filepath.Join(p.dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != nil {
			os.Remove(path)
			continue
		}
		var st syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
			st.Size != 0 || st.Nlink != 1 || int(st.Uid) != os.Geteuid() {
			f.Close()
			os.Remove(path)
			continue
		}
		return f, path
	}
}

// Fill makes spares until the pool holds n or stop reports true; it
// returns how many it made.
func (p *Pool) Fill(n int, stop func() bool) (int, error) {
	made := 0
	for p.Len() < n && !stop() {
		p.mu.Lock()
		p.seq++
		name := fmt.Sprintf("%s%d", p.prefix, p.seq)
		p.mu.Unlock()
		f, err := os.OpenFile(filepath.Join(p.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return made, err
		}
		f.Close()
		p.mu.Lock()
		p.names = append(p.names, name)
		p.mu.Unlock()
		made++
	}
	return made, nil
}

// Keep fills the pool up to n whenever idle reports true, until ctx ends,
// at the lowest CPU priority (a look every 100 ms; a fill stops as soon as idle turns false, so a
// pass never waits behind it). A fill that fails (a full disk) is tried
// again at the next look.
func (p *Pool) Keep(ctx context.Context, n int, idle func() bool) {
	idlePriority() // nice 19, this goroutine's thread only (nice_linux.go)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p.Len() < n && idle() {
			p.Fill(n, func() bool { return ctx.Err() != nil || !idle() })
		}
	}
}

// spares maps a directory to the pool that writes below it take their
// temporary files from (like deferred).
var spares = newByRoot[*Pool]()

// UseSpares makes writes below each of roots (WriteAtomic) take their
// temporary file from p; DropSpares ends it.
func UseSpares(roots []string, p *Pool) { spares.use(roots, p) }

// DropSpares ends UseSpares for the roots still handed to p.
func DropSpares(roots []string, p *Pool) { spares.drop(roots, p) }

// SparesFor returns the pool for writes to path, or nil.
func SparesFor(path string) *Pool { return spares.at(path) }

// spareSource is path's pool as an atomicfile.Spares (a nil interface when
// there is none).
func spareSource(path string) atomicfile.Spares {
	if p := SparesFor(path); p != nil {
		return p
	}
	return nil
}
