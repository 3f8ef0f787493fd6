package launch

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// events appends one JSON object per line to the --events file: the
// session's start, its active layers, network decisions, limits hit and its
// end. Lines are written whole with O_APPEND, so several sessions may share
// one file. Fields are only ever added.
type events struct {
	mu      sync.Mutex
	f       *os.File
	session string
}

func (e *events) emit(name string, fields map[string]any) {
	if e == nil || e.f == nil {
		return
	}
	m := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "session": e.session, "event": name}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.f.Write(append(b, '\n'))
}

func (e *events) close() {
	if e != nil && e.f != nil {
		e.f.Close()
	}
}
