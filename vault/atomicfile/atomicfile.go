// Package atomicfile writes a file so that a reader sees its old content
// or its new, and a crash leaves one of them: a temporary file, written,
// synced and renamed over the path, then the folder synced. It is the one
// such writer of the Git layer (vault/repo, its index) and the gate
// (gate/durable, which defers the fsyncs of a group commit to its
// barrier). It links nothing but the standard library.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Later takes the fsyncs of a written file (and its folder) to do later,
// at a barrier of the caller's (gate/durable.Syncer).
type Later interface{ Add(path string) }

// Write writes b to path through a temporary file in tmpDir (same
// filesystem as path), with mode. With later nil the file and its folder
// are synced before Write returns; otherwise the path is handed to later
// after the rename and nothing is synced here.
func Write(tmpDir, path string, b []byte, mode os.FileMode, later Later) error {
	f, err := os.CreateTemp(tmpDir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if later == nil {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if later != nil {
		later.Add(path)
		return nil
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a folder: what makes a rename or an unlink in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
