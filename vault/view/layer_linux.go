package view

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxPageBytes bounds a folder page the layer rewrites (the gate's pages
// are at most 256 KiB; a larger one is hidden whole rather than shown
// unfiltered).
const MaxPageBytes = 4 << 20

// Point is a mount point the overlay must hold (a later mount of the
// sandbox below it: the inbox, a mask, the workdir), relative to src.
type Point struct {
	Path string
	Dir  bool
}

// BuildLayer (hidden as Mount.Hide carries them: EncodePath) fills the empty directory layer with the top layer of a
// read-only overlay over src that hides the entries (paths relative to
// src): a whiteout (the character device 0:0, which an unprivileged user
// namespace may make) at each hidden path, and each folder page that
// lists a hidden note rewritten without its line. A folder the layer must
// hold takes src's folder's mode, read-only (an overlay folder's mode is
// the top layer's). Entries whose parent is not a folder of src are left
// out: nothing to hide. Each of points src does not hold (as a folder or
// not, as the point is) is made in the layer — an empty folder or file,
// read-only — for the mount that goes there; a hidden path at or below a
// point is left to that mount, and a hidden folder above one shows only
// the way to it (every other entry of it a whiteout).
func BuildLayer(layer, src string, hidden []string, points []Point) error {
	l := &layerBuilder{layer: layer, src: src, modes: map[string]os.FileMode{}, points: map[string]bool{}}
	if fi, err := os.Stat(src); err == nil {
		l.modes["."] = fi.Mode().Perm() & 0o555
	}
	for _, p := range points {
		if !CleanRel(p.Path) {
			return fmt.Errorf("view: mount point %q is not a clean relative path", p.Path)
		}
		for q := p.Path; q != "."; q = path.Dir(q) {
			l.points[q] = true
		}
	}
	for _, p := range points {
		if err := l.point(p); err != nil {
			return err
		}
	}
	encoded := hidden
	hidden = make([]string, len(encoded))
	for i, h := range encoded {
		h, err := DecodePath(h)
		if err != nil || !CleanRel(h) {
			return fmt.Errorf("view: hidden path %q is not a clean relative path", encoded[i])
		}
		hidden[i] = h
		if l.covered(h) {
			continue
		}
		if l.points[h] {
			// A folder on the way to a mount point: only that way shows.
			if err := l.hideExcept(h); err != nil {
				return err
			}
			continue
		}
		// A path gone since the manifest was made gets its whiteout
		// anyway (harmless: nothing below to hide); a parent folder gone
		// is skipped.
		if err := l.whiteout(h); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
	}
	l.hidden = make(map[string]bool, len(hidden))
	for _, h := range hidden {
		l.hidden[h] = true
	}
	for dir := range PagesOf(hidden) {
		if err := l.filterPages(dir); err != nil {
			return err
		}
	}
	return l.seal()
}

// layerBuilder makes one view layer; modes are the layer's folders and
// the read-only modes they take once everything is in them (seal).
type layerBuilder struct {
	layer, src string
	modes      map[string]os.FileMode
	// points are the mount points and the folders on the way to them;
	// mounted the points themselves (pointAt).
	points  map[string]bool
	mounted []string
	// hidden are the paths hidden (FilterLinks: a page's line that links
	// one goes).
	hidden map[string]bool
}

func (l *layerBuilder) isHidden(p string) bool { return Within(l.hidden, p) }

// covered says whether a later mount covers p (p is at or below a mount
// point).
func (l *layerBuilder) covered(p string) bool {
	for _, m := range l.mounted {
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

// point makes the mount point p in the layer unless src has it already.
func (l *layerBuilder) point(p Point) error {
	l.mounted = append(l.mounted, p.Path)
	if fi, err := os.Lstat(filepath.Join(l.src, p.Path)); err == nil && fi.IsDir() == p.Dir && fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	if p.Dir {
		return l.mkdirs(p.Path)
	}
	if err := l.mkdirs(path.Dir(p.Path)); err != nil {
		return err
	}
	full := filepath.Join(l.layer, p.Path)
	if _, err := os.Lstat(full); err == nil {
		return nil
	}
	if err := os.WriteFile(full, nil, 0o444); err != nil {
		return fmt.Errorf("view: mount point %s: %w", p.Path, err)
	}
	return nil
}

// hideExcept hides every entry of the folder h (a hidden path with a
// mount point below it) but the way to the point.
func (l *layerBuilder) hideExcept(h string) error {
	if err := l.mkdirs(h); err != nil {
		return err
	}
	ents, err := os.ReadDir(filepath.Join(l.src, h))
	if err != nil {
		return nil // not in src: nothing to hide
	}
	for _, e := range ents {
		p := path.Join(h, e.Name())
		switch {
		case l.covered(p):
		case l.points[p]:
			if err := l.hideExcept(p); err != nil {
				return err
			}
		default:
			if err := l.whiteout(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// seal gives each folder of the layer its mode, deepest first.
func (l *layerBuilder) seal() error {
	dirs := make([]string, 0, len(l.modes))
	for d := range l.modes {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool {
		return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") || dirs[i] > dirs[j] && strings.Count(dirs[i], "/") == strings.Count(dirs[j], "/")
	})
	for _, d := range dirs {
		if err := os.Chmod(filepath.Join(l.layer, d), l.modes[d]); err != nil {
			return fmt.Errorf("view: %w", err)
		}
	}
	return nil
}

// mkdirs makes rel (and its parents) in the layer; they take src's modes
// at seal.
func (l *layerBuilder) mkdirs(rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	if _, ok := l.modes[rel]; ok {
		return nil
	}
	if err := l.mkdirs(path.Dir(rel)); err != nil {
		return err
	}
	mode := os.FileMode(0o555) // a mount point's folder src does not have
	fi, err := os.Lstat(filepath.Join(l.src, rel))
	switch {
	case err == nil && fi.IsDir():
		mode = fi.Mode().Perm() & 0o555
	case !l.points[rel] && err != nil:
		return fmt.Errorf("view: folder %s: %w", rel, err)
	case !l.points[rel]:
		return fmt.Errorf("view: %s is not a folder", rel)
	}
	if err := os.Mkdir(filepath.Join(l.layer, rel), 0o700); err != nil {
		return fmt.Errorf("view: folder %s: %w", rel, err)
	}
	l.modes[rel] = mode
	return nil
}

// whiteout hides p.
func (l *layerBuilder) whiteout(p string) error {
	if err := l.mkdirs(path.Dir(p)); err != nil {
		return err
	}
	if err := unix.Mknod(filepath.Join(l.layer, p), unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("view: whiteout %s: %w", p, err)
	}
	return nil
}

// filterPages rewrites dir's pages (index.md, log.md, index/*.md,
// log/*.md) that link to names.
func (l *layerBuilder) filterPages(dir string) error {
	pages := []string{path.Join(dir, "index.md"), path.Join(dir, "log.md")}
	for _, kind := range []string{"index", "log"} {
		ents, err := os.ReadDir(filepath.Join(l.src, dir, kind))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if p := path.Join(dir, kind, e.Name()); e.Type().IsRegular() && IsPage(p) {
				pages = append(pages, p)
			}
		}
	}
	for _, p := range pages {
		if err := l.filterPage(p); err != nil {
			return err
		}
	}
	return nil
}

func (l *layerBuilder) filterPage(p string) error {
	if _, err := os.Lstat(filepath.Join(l.layer, p)); err == nil {
		return nil // hidden itself (a page that says withheld)
	}
	full := filepath.Join(l.src, p)
	fi, err := os.Lstat(full)
	if err != nil || !fi.Mode().IsRegular() {
		return nil // no such page
	}
	if fi.Size() > MaxPageBytes {
		return l.whiteout(p)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return l.whiteout(p) // fail closed: not shown unfiltered
	}
	out := FilterLinks(b, p, l.isHidden)
	if len(out) == len(b) {
		return nil
	}
	if err := l.mkdirs(path.Dir(p)); err != nil {
		return err
	}
	dst := filepath.Join(l.layer, p)
	if err := os.WriteFile(dst, out, 0o600); err != nil {
		return fmt.Errorf("view: page %s: %w", p, err)
	}
	return os.Chmod(dst, fi.Mode().Perm()&0o444)
}
