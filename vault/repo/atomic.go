package repo

import (
	"os"
	"path/filepath"
)

// WriteAtomicVia writes b to path through a temporary file in tmpDir,
// synced, renamed over path, and the folder synced: a reader sees the old
// content or the new, and a crash leaves one of them.
func WriteAtomicVia(tmpDir, path string, b []byte, mode os.FileMode) error {
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
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a folder (what makes a rename or an unlink in it durable).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
