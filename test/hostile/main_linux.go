package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Result is one JSON line. The escape test decodes the same shape.
type Result struct {
	Attempt  string `json:"attempt"`
	Target   string `json:"target"`
	OK       bool   `json:"ok"`
	Errno    string `json:"errno"`
	Err      string `json:"err,omitempty"`
	Positive bool   `json:"positive,omitempty"`
	Saw      string `json:"saw,omitempty"`
}

// H holds what every attempt needs.
type H struct {
	out     io.Writer
	outFile *os.File
	vault   string
	inbox   string
	session string
	home    string
	workdir string
	other   string // another session's inbox dir (absolute)
	draft   string // a draft's file name inside other
	note    string // absolute path of a note in the vault
	// abstract names an abstract unix socket outside the sandbox (an
	// X11 server or a D-Bus bus would be one): reaching it is an escape.
	abstract string
}

func main() {
	// The fd census runs before anything else opens a file (flag parsing
	// does not), so the only extra fd it can see is one the sandbox leaked.
	fdResult := fdCensus()

	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	sub := os.Args[1]
	fs := flag.NewFlagSet("hostile "+sub, flag.ContinueOnError)
	h := &H{out: os.Stdout}
	fs.StringVar(&h.vault, "vault", os.Getenv("FEDMEM_VAULT"), "vault root")
	fs.StringVar(&h.inbox, "inbox", os.Getenv("FEDMEM_INBOX"), "own inbox")
	fs.StringVar(&h.session, "session", os.Getenv("FEDMEM_SESSION"), "own session id")
	fs.StringVar(&h.home, "home", os.Getenv("HOME"), "home directory")
	wd, _ := os.Getwd()
	fs.StringVar(&h.workdir, "workdir", wd, "workdir")
	fs.StringVar(&h.other, "other-session", "", "another session's inbox directory")
	fs.StringVar(&h.draft, "other-draft", "draft.md", "file name of a draft in --other-session")
	note := fs.String("note", "10-projects/note.md", "a note, relative to the vault")
	fs.StringVar(&h.abstract, "abstract", "", "name of an abstract unix socket listening outside the sandbox")
	outPath := fs.String("out", "", "append JSON lines to this file instead of stdout")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if *outPath != "" {
		f, err := os.OpenFile(*outPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile:", err)
			os.Exit(2)
		}
		h.out, h.outFile = f, f
	}
	h.note = filepath.Join(h.vault, *note)

	switch sub {
	case "exit":
		n, err := strconv.Atoi(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile exit N")
			os.Exit(2)
		}
		os.Exit(n)
	case "fds":
		h.emit(fdResult)
	case "tiocsti":
		h.tiocsti(true)
	case "files":
		// The vault matrix only; used by the control test outside a
		// sandbox, where it is expected to succeed.
		if h.vault == "" || h.inbox == "" {
			fmt.Fprintln(os.Stderr, "hostile files needs --vault and --inbox")
			os.Exit(2)
		}
		h.vaultMatrix()
	case "nested-escape":
		h.nestedEscape()
	case "hide-reads":
		h.hideReads()
	case "all":
		if h.session == "" || h.vault == "" || h.inbox == "" {
			// Refuse to trash a real machine: "all" remounts, ptraces
			// and writes /etc; it only makes sense inside fedmem-run.
			fmt.Fprintln(os.Stderr, "hostile all: FEDMEM_SESSION, FEDMEM_VAULT and FEDMEM_INBOX must be set (run me inside fedmem-run)")
			os.Exit(2)
		}
		h.emit(fdResult)
		h.all()
	default:
		usage()
		os.Exit(2)
	}
	h.emit(Result{Attempt: "done", Target: sub, Positive: true, OK: true})
	if h.outFile != nil {
		h.outFile.Close()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: hostile all|files|fds|tiocsti|exit N [flags]
  all       every attempt (only inside fedmem-run)
  files     the vault file/dir matrix only (--vault, --inbox)
  fds       list open file descriptors
  tiocsti   TIOCSTI/TIOCLINUX ioctls on stdin
  hide-reads  read notes in ways meant to escape the read receipt
  exit N    exit with status N`)
}

func (h *H) emit(r Result) {
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	h.out.Write(b)
}

// report turns an error into a Result. err == nil means the operation
// succeeded.
func (h *H) report(attempt, target string, err error) {
	r := Result{Attempt: attempt, Target: target, OK: err == nil}
	if err != nil {
		r.Errno = errnoName(err)
		r.Err = err.Error()
	}
	h.emit(r)
}

func (h *H) positive(attempt, target string, err error) {
	r := Result{Attempt: attempt, Target: target, OK: err == nil, Positive: true}
	if err != nil {
		r.Errno = errnoName(err)
		r.Err = err.Error()
	}
	h.emit(r)
}

// check reports a state check: bad says whether what was seen is unsafe.
func (h *H) check(attempt, target, saw string, bad bool, err error) {
	r := Result{Attempt: attempt, Target: target, OK: bad, Saw: saw}
	if err != nil {
		r.Errno = errnoName(err)
		r.Err = err.Error()
	}
	h.emit(r)
}

func errnoName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := errName(e); n != "" {
			return n
		}
		return "errno" + strconv.Itoa(int(e))
	}
	return "NOERRNO"
}

func (h *H) all() {
	h.statusChecks()
	h.envCheck()
	h.positives()
	h.vaultMatrix()
	h.otherSessions()
	h.mountFamily()
	h.namespaces()
	h.processes()
	h.kernelSurface()
	h.tiocsti(false)
	h.hostPaths()
	h.secrets()
	h.sockets()
}

func (h *H) envCheck() {
	saw, _ := json.Marshal(map[string]any{
		"vault": h.vault, "inbox": h.inbox, "session": h.session,
		"uid": os.Getuid(), "gid": os.Getgid(), "euid": os.Geteuid(),
		"pid": os.Getpid(), "ppid": os.Getppid(), "cwd": h.workdir, "home": h.home,
	})
	ok := h.inbox == filepath.Join(h.vault, "90-inbox", h.session)
	h.emit(Result{Attempt: "info-env", Target: "FEDMEM_*", OK: ok, Positive: true, Saw: string(saw)})
	for _, f := range []string{"/proc/self/uid_map", "/proc/self/gid_map", "/proc/self/attr/current"} {
		b, err := os.ReadFile(f)
		h.emit(Result{Attempt: "info-file", Target: f, OK: err == nil, Positive: true, Saw: strings.TrimSpace(string(b))})
	}
}

// positives must succeed: the agent's legitimate work.
func (h *H) positives() {
	tmp := filepath.Join(h.inbox, "x.md.tmp")
	err := os.WriteFile(tmp, []byte("---\ntype: note\n---\n# hostile draft\n"), 0o644)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(h.inbox, "x.md"))
	}
	if err == nil {
		_, err = os.ReadFile(filepath.Join(h.inbox, "x.md"))
	}
	h.positive("inbox-draft", filepath.Join(h.inbox, "x.md"), err)
	// Device nodes never belong in an inbox (the gate must not meet one).
	h.report("mknod-chr-inbox", filepath.Join(h.inbox, "null"), unix.Mknod(filepath.Join(h.inbox, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	h.report("mknod-blk-inbox", filepath.Join(h.inbox, "vda"), unix.Mknod(filepath.Join(h.inbox, "vda"), unix.S_IFBLK|0o666, int(unix.Mkdev(253, 0))))
	// A FIFO may or may not be allowed; either way the gate must cope.
	err = unix.Mkfifo(filepath.Join(h.inbox, "fifo.md"), 0o644)
	h.emit(Result{Attempt: "info-mkfifo-inbox", Target: filepath.Join(h.inbox, "fifo.md"), OK: err == nil, Positive: true, Errno: errStr(err)})
	h.positive("workdir-write", filepath.Join(h.workdir, "hostile-wrote-here.txt"),
		os.WriteFile(filepath.Join(h.workdir, "hostile-wrote-here.txt"), []byte("ok\n"), 0o644))
	h.positive("tmp-write", "/tmp/hostile-tmp.txt", os.WriteFile("/tmp/hostile-tmp.txt", []byte("ok\n"), 0o644))
	// Moving a file to another directory of a writable tree (install
	// scripts do: stage in a temp dir, rename into place). Landlock denies
	// such a reparenting (EXDEV) in any domain that does not grant it.
	stage := filepath.Join(h.workdir, "stage", "sub")
	err = os.MkdirAll(stage, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(stage, "f"), []byte("ok\n"), 0o644)
	}
	if err == nil {
		err = os.Rename(filepath.Join(stage, "f"), filepath.Join(h.workdir, "stage", "f"))
	}
	h.positive("workdir-rename-across-dirs", filepath.Join(h.workdir, "stage", "f"), err)
}

func errStr(err error) string {
	if err == nil {
		return ""
	}
	return errnoName(err)
}
