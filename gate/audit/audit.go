package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// File and HeadFile are the names of the log and its head in the state dir.
const (
	File     = "audit.jsonl"
	HeadFile = "audit.head"
)

// Entry is one log line.
type Entry struct {
	Seq  int64           `json:"seq"`
	Time string          `json:"time"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
	Prev string          `json:"prev"`
	Hash string          `json:"hash"`
}

type head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// hash computes the entry's chain hash over its JSON with Hash empty.
func (e Entry) hash() (string, error) {
	e.Hash = ""
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte("fedmem-audit-v1\n"), b...))
	return hex.EncodeToString(sum[:]), nil
}

// Log appends entries. It is safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	dir  string
	f    *os.File
	last head
	now  func() time.Time
}

// Open opens (or creates) the log in dir. A partial last line left by a crash
// mid-write is cut off, and the head file is brought up to the last entry.
func Open(dir string) (*Log, error) {
	path := filepath.Join(dir, File)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := &Log{dir: dir, f: f, now: time.Now}
	if err := l.recover(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) recover() error {
	b, err := io.ReadAll(io.NewSectionReader(l.f, 0, 1<<62))
	if err != nil {
		return fmt.Errorf("audit: read: %w", err)
	}
	if n := bytes.LastIndexByte(b, '\n'); n+1 != len(b) {
		if err := l.f.Truncate(int64(n + 1)); err != nil {
			return fmt.Errorf("audit: cut partial line: %w", err)
		}
		b = b[:n+1]
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(b) > 0 {
		var e Entry
		if err := json.Unmarshal(lines[len(lines)-1], &e); err != nil {
			return fmt.Errorf("audit: last entry unreadable (run `fedmem audit verify`): %w", err)
		}
		l.last = head{e.Seq, e.Hash}
	}
	return l.writeHead()
}

func (l *Log) writeHead() error {
	b, _ := json.Marshal(l.last)
	tmp := filepath.Join(l.dir, HeadFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("audit: head: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(l.dir, HeadFile)); err != nil {
		return fmt.Errorf("audit: head: %w", err)
	}
	return nil
}

// Append adds one entry of kind with data (any JSON-marshalable value) and
// makes it durable before returning.
func (l *Log) Append(kind string, data any) (Entry, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := Entry{Seq: l.last.Seq + 1, Time: l.now().UTC().Format(time.RFC3339Nano), Kind: kind, Data: raw, Prev: l.last.Hash}
	if e.Hash, err = e.hash(); err != nil {
		return Entry{}, fmt.Errorf("audit: %w", err)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: %w", err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return Entry{}, fmt.Errorf("audit: append: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return Entry{}, fmt.Errorf("audit: sync: %w", err)
	}
	l.last = head{e.Seq, e.Hash}
	return e, l.writeHead()
}

// Head names the last entry appended (or recovered) as "<seq>:<hash>", the
// form the gate writes in a commit's Fedmem-Audit-Head trailer so the end of
// the log is anchored outside the gate's state directory. An empty log's head
// is "0:". Call it after the Append whose entry the commit must cover.
func (l *Log) Head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d:%s", l.last.Seq, l.last.Hash)
}

// Close closes the log file.
func (l *Log) Close() error { return l.f.Close() }

// Problem is one verification failure, at a 1-based line of the log.
type Problem struct {
	Line int
	Msg  string
}

// ErrTampered is wrapped by Verify's error when the chain is broken.
var ErrTampered = errors.New("audit log does not verify")

// Verify checks the chain in dir. It returns the number of entries and every
// problem found; err wraps ErrTampered when there is any problem.
func Verify(dir string) (int64, []Problem, error) {
	path := filepath.Join(dir, File)
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	var probs []Problem
	add := func(line int, format string, args ...any) {
		probs = append(probs, Problem{line, fmt.Sprintf(format, args...)})
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var prev head
	n := 0
	for sc.Scan() {
		n++
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			add(n, "entry is not valid JSON (%v)", err)
			continue
		}
		if h, err := e.hash(); err != nil || h != e.Hash {
			add(n, "entry seq %d was changed (its hash does not match its content)", e.Seq)
		}
		if e.Seq != prev.Seq+1 {
			add(n, "entry seq %d follows seq %d: entries were removed, inserted or reordered", e.Seq, prev.Seq)
		} else if e.Prev != prev.Hash {
			add(n, "entry seq %d does not chain to the entry before it", e.Seq)
		}
		prev = head{e.Seq, e.Hash}
	}
	if err := sc.Err(); err != nil {
		return prev.Seq, probs, fmt.Errorf("audit: read: %w", err)
	}
	hb, err := os.ReadFile(filepath.Join(dir, HeadFile))
	if err != nil {
		add(n, "head file missing (%v): cannot tell whether the log was truncated", err)
	} else {
		var h head
		if err := json.Unmarshal(hb, &h); err != nil {
			add(n, "head file unreadable: %v", err)
		} else if h != prev {
			add(n, "log ends at seq %d but the head file says seq %d: entries were removed from the end or the head was changed", prev.Seq, h.Seq)
		}
	}
	if len(probs) > 0 {
		return prev.Seq, probs, fmt.Errorf("%s: %d problem(s): %w", path, len(probs), ErrTampered)
	}
	return prev.Seq, nil, nil
}
