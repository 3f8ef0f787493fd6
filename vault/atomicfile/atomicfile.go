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

// Spares hands out empty files made ahead of time, on the filesystem of
// the paths written, to be written and renamed into place instead of a new
// temporary file (gate/durable.Pool): a new inode is the dearest step of a
// small write on a busy ext4 (about a millisecond, against a tenth of that
// for writing an existing empty file).
type Spares interface {
	// Take returns an empty regular file of the caller's, open for
	// writing, and its path; nil when there is none.
	Take() (*os.File, string)
}

// Write writes b to path through a temporary file in tmpDir (same
// filesystem as path), with mode. With later nil the file and its folder
// are synced before Write returns; otherwise the path is handed to later
// after the rename and nothing is synced here.
func Write(tmpDir, path string, b []byte, mode os.FileMode, later Later) error {
	return WriteSpare(nil, tmpDir, path, b, mode, later)
}

// WriteSpare is Write with the temporary file taken from sp when it has
// one (nil: none). The spare is given tmpDir's group when tmpDir is
// setgid, as a file made there would have. A spare that cannot be used
// (its rename fails: another filesystem) is removed and the write done
// through a new temporary file.
func WriteSpare(sp Spares, tmpDir, path string, b []byte, mode os.FileMode, later Later) error {
	if sp != nil {
		if f, tmp := sp.Take(); f != nil {
			if err := matchGroup(f, tmpDir); err != nil {
				f.Close()
				os.Remove(tmp)
			} else if err := writeInto(f, tmp, path, b, mode, later); err == nil {
				return nil
			}
		}
	}
	f, err := os.CreateTemp(tmpDir, ".tmp-*")
	if err != nil {
		return err
	}
	return writeInto(f, f.Name(), path, b, mode, later)
}

// writeInto writes b into f (at tmp), syncs it unless later takes the
// fsyncs, and renames it to path; on an error f is closed and tmp removed.
func writeInto(f *os.File, tmp, path string, b []byte, mode os.FileMode, later Later) error {
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
