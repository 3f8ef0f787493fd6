package vault

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadHead returns the commit id HEAD points at, reading .git directly
// (HEAD, loose refs, packed-refs) so that the launcher need not link a Git
// library. An unborn branch returns "" and no error.
func ReadHead(vaultDir string) (string, error) {
	gitDir := filepath.Join(vaultDir, ".git")
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	head := strings.TrimSpace(string(b))
	ref, ok := strings.CutPrefix(head, "ref: ")
	if !ok {
		return head, nil // detached
	}
	if strings.Contains(ref, "..") || !strings.HasPrefix(ref, "refs/") {
		return "", fmt.Errorf("read HEAD: odd ref %q", ref)
	}
	if b, err := os.ReadFile(filepath.Join(gitDir, ref)); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	f, err := os.Open(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return "", nil // unborn
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if id, name, ok := strings.Cut(line, " "); ok && name == ref {
			return id, nil
		}
	}
	return "", sc.Err()
}
