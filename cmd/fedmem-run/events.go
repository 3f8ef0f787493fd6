package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// events appends one JSON object per line to the --events file: the
// session's start, its active layers, limits hit and its end. Lines are
// written whole with O_APPEND, so several sessions may share one file.
// Fields are only ever added.
type events struct {
	mu      sync.Mutex
	f       *os.File
	session string
}

func openEvents(path, session string) (*events, error) {
	if path == "" {
		return &events{}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--events: %w", err)
	}
	return &events{f: f, session: session}, nil
}

func (e *events) emit(name string, fields map[string]any) {
	if e.f == nil {
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
	if e.f != nil {
		e.f.Close()
	}
}
