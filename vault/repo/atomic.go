package repo

import (
	"os"

	"github.com/fedmem/fedmem/vault/atomicfile"
)

// WriteAtomicVia writes b to path through a temporary file in tmpDir,
// synced, renamed over path, and the folder synced (vault/atomicfile): a
// reader sees the old content or the new, and a crash leaves one of them.
func WriteAtomicVia(tmpDir, path string, b []byte, mode os.FileMode) error {
	return atomicfile.Write(tmpDir, path, b, mode, nil)
}

// syncDir fsyncs a folder (what makes a rename or an unlink in it durable).
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }
