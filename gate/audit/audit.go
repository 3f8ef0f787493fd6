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
	"strconv"
	"strings"
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
	mu sync.Mutex
	// syncMu orders Syncs (each writes the head it made durable) without
	// holding mu, so appends go on while the disk works.
	syncMu sync.Mutex
	// headMu guards the head file's writes (taken last, never held while
	// waiting for another lock); headSeq is the entry it records.
	headMu  sync.Mutex
	headSeq int64
	dir     string
	d       *os.File // the verified state directory; files are opened relative to it
	f       *os.File
	last    head
	// deferSync and unsynced: see SetDeferSync.
	deferSync, unsynced bool
	now                 func() time.Time
}

// ErrCut is wrapped by Open's error when the log does not reach the head
// recorded in audit.head: entries were removed from its end (or the head was
// changed). Open refuses to continue such a log, so the cut stays visible
// after a restart instead of being papered over by a rewritten head.
var ErrCut = errors.New("audit log does not reach its recorded head")

// Open opens (or creates) the log in dir. dir must be a directory, not a
// symbolic link, owned by the caller and writable by nobody else; the log
// and head files are opened relative to it without following links (a link
// planted there would otherwise make the gate append to a file of the
// planter's choosing). A partial last line left by a crash mid-write is cut
// off. A log that ends before the head file's entry, or whose entry at that
// sequence number has another hash, is refused with ErrCut; a log one or more
// whole entries past the head (a crash between the append and the head
// update) is accepted and the head brought up to its end.
func Open(dir string) (*Log, error) {
	d, err := openTrustedDir(dir)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	f, err := openLogFile(d, File, true)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("audit: %s: %w", filepath.Join(dir, File), err)
	}
	l := &Log{dir: dir, d: d, f: f, now: time.Now}
	if err := l.recover(); err != nil {
		f.Close()
		d.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) recover() error {
	path := filepath.Join(l.dir, File)
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
	var lines [][]byte
	if len(b) > 0 {
		lines = bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		var e Entry
		if err := json.Unmarshal(lines[len(lines)-1], &e); err != nil {
			return fmt.Errorf("audit: %s:%d: last entry unreadable (run `fedmem audit verify`): %w", path, len(lines), err)
		}
		l.last = head{e.Seq, e.Hash}
	}
	recorded, ok, err := l.readHead()
	if err != nil {
		return err
	}
	headPath := filepath.Join(l.dir, HeadFile)
	switch {
	case !ok && len(lines) > 0:
		return fmt.Errorf("audit: %s is missing but %s holds %d entries: cannot tell whether the log was cut; refusing to continue it (run `fedmem audit verify --vault DIR`): %w", headPath, path, len(lines), ErrCut)
	case ok && recorded.Seq > 0:
		if l.last.Seq < recorded.Seq {
			return fmt.Errorf("audit: %s:%d: the log ends at seq %d but %s records seq %d: entries were removed from its end; refusing to continue it (run `fedmem audit verify --vault DIR`): %w",
				path, len(lines), l.last.Seq, headPath, recorded.Seq, ErrCut)
		}
		// Entries are numbered from 1, one a line: seq N is line N.
		var e Entry
		if recorded.Seq > int64(len(lines)) || json.Unmarshal(lines[recorded.Seq-1], &e) != nil || e.Seq != recorded.Seq || e.Hash != recorded.Hash {
			return fmt.Errorf("audit: %s:%d: the entry at seq %d is not the one %s records (hash %.12s): the log was rewritten; refusing to continue it (run `fedmem audit verify --vault DIR`): %w",
				path, recorded.Seq, recorded.Seq, headPath, recorded.Hash, ErrCut)
		}
	}
	return l.writeHead()
}

// readHead reads the head file; ok is false when there is none.
func (l *Log) readHead() (head, bool, error) {
	var h head
	f, err := openLogFile(l.d, HeadFile, false)
	if errors.Is(err, os.ErrNotExist) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("audit: %s: %w", filepath.Join(l.dir, HeadFile), err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return h, false, fmt.Errorf("audit: %s: %w", filepath.Join(l.dir, HeadFile), err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, false, fmt.Errorf("audit: %s: unreadable (%v); refusing to guess where the log ends (run `fedmem audit verify --vault DIR`): %w", filepath.Join(l.dir, HeadFile), err, ErrCut)
	}
	return h, true, nil
}

func (l *Log) writeHead() error { return l.writeHeadAt(l.last) }

// writeHeadAt records h as the log's durable head. A background Sync and
// an Append may both record one; the head never moves back.
func (l *Log) writeHeadAt(h head) error {
	l.headMu.Lock()
	defer l.headMu.Unlock()
	if h.Seq < l.headSeq {
		return nil
	}
	l.headSeq = h.Seq
	b, _ := json.Marshal(h)
	if err := replaceFile(l.d, HeadFile, append(b, '\n')); err != nil {
		return fmt.Errorf("audit: head %s: %w", filepath.Join(l.dir, HeadFile), err)
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
	l.last = head{e.Seq, e.Hash}
	if l.deferSync {
		// Group mode: Sync makes the entries durable and moves the head
		// (a log past its head is accepted on Open; never one short of it).
		l.unsynced = true
		return e, nil
	}
	if err := l.f.Sync(); err != nil {
		return Entry{}, fmt.Errorf("audit: sync: %w", err)
	}
	return e, l.writeHead()
}

// SetDeferSync switches group mode on or off: while on, Append writes its
// entry without fsync and leaves the head file behind; Sync catches up.
// Switching it off syncs.
func (l *Log) SetDeferSync(on bool) error {
	l.mu.Lock()
	l.deferSync = on
	l.mu.Unlock()
	if !on {
		return l.Sync()
	}
	return nil
}

// Sync makes every entry appended so far durable and records the head.
// Appends made while it waits on the disk are not held up (the gate's
// group commit syncs the log in the background while it decides the next
// group); they are made durable by the next Sync.
func (l *Log) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if !l.unsynced {
		l.mu.Unlock()
		return nil
	}
	last := l.last
	l.unsynced = false
	l.mu.Unlock()
	// fsync covers every byte written before it starts: at least up to last.
	if err := l.f.Sync(); err != nil {
		l.mu.Lock()
		l.unsynced = true
		l.mu.Unlock()
		return fmt.Errorf("audit: sync: %w", err)
	}
	if err := l.writeHeadAt(last); err != nil {
		l.mu.Lock()
		l.unsynced = true
		l.mu.Unlock()
		return err
	}
	return nil
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
func (l *Log) Close() error {
	err := l.f.Close()
	l.d.Close()
	return err
}

// Problem is one verification failure, at a 1-based line of the log.
type Problem struct {
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

// ErrTampered is wrapped by Verify's error when the chain is broken.
var ErrTampered = errors.New("audit log does not verify")

// Anchor is a head recorded outside the state directory — the
// Fedmem-Audit-Head trailer of a gate commit — that the chain must contain.
type Anchor struct {
	Head   string // "<seq>:<hash>", as (*Log).Head returns it
	Source string // where it was recorded, e.g. "commit 1a2b3c4d5e6f"
}

// ParseHead splits a head written by (*Log).Head.
func ParseHead(s string) (seq int64, hash string, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, "", fmt.Errorf("audit head %q: want <seq>:<hash>", s)
	}
	seq, err = strconv.ParseInt(a, 10, 64)
	if err != nil || seq < 0 || (seq > 0) != (len(b) == 64) {
		return 0, "", fmt.Errorf("audit head %q: want <seq>:<sha256 hex>", s)
	}
	return seq, b, nil
}

// Verify checks the chain in dir. It returns the number of entries and every
// problem found; err wraps ErrTampered when there is any problem.
func Verify(dir string) (int64, []Problem, error) {
	return VerifyAnchored(dir, nil)
}

// VerifyAnchored is Verify that also checks that every anchor's entry is in
// the chain (same sequence number, same hash). An anchor past the log's end
// means entries were cut from the end — with the head file rewritten to
// match or not — and is reported at the line where the missing entry
// belongs; an anchor whose entry has another hash means the log was
// rewritten after the anchoring commit.
func VerifyAnchored(dir string, anchors []Anchor) (int64, []Problem, error) {
	path := filepath.Join(dir, File)
	f, err := openForVerify(dir, File)
	if err != nil {
		return 0, nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	defer f.Close()
	var probs []Problem
	add := func(line int, format string, args ...any) {
		probs = append(probs, Problem{line, fmt.Sprintf(format, args...)})
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var prev head
	// bySeq[i] is the hash and line of the entry with seq i+1, as found.
	type at struct {
		hash string
		line int
	}
	var bySeq []at
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
		if e.Seq == int64(len(bySeq))+1 {
			bySeq = append(bySeq, at{e.Hash, n})
		}
		prev = head{e.Seq, e.Hash}
	}
	if err := sc.Err(); err != nil {
		return prev.Seq, probs, fmt.Errorf("audit: %s:%d: read: %w", path, n+1, err)
	}
	hb, err := readForVerify(dir, HeadFile)
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
	for _, a := range anchors {
		seq, hash, err := ParseHead(a.Head)
		switch {
		case err != nil:
			add(n, "%s: unreadable Fedmem-Audit-Head: %v", a.Source, err)
		case seq == 0:
		case seq > int64(len(bySeq)):
			add(n+1, "%s records audit head seq %d (%.12s) but the log ends at seq %d: entries were removed from its end after that commit", a.Source, seq, hash, len(bySeq))
		case bySeq[seq-1].hash != hash:
			add(bySeq[seq-1].line, "%s records audit head seq %d as %.12s but the log's entry seq %d is %.12s: the log was rewritten after that commit", a.Source, seq, hash, seq, bySeq[seq-1].hash)
		}
	}
	if len(probs) > 0 {
		return prev.Seq, probs, fmt.Errorf("%s: %d problem(s): %w", path, len(probs), ErrTampered)
	}
	return prev.Seq, nil, nil
}
