package review

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/record"
	"github.com/fedmem/fedmem/gate/sweep"
)

// Desk is what the review socket serves: the gate's review operations,
// each taking the gate's lock itself, and its audit log (Note) for
// refusals. The reviewer is always the peer's name from the kernel.
type Desk interface {
	Note(kind string, data any)
	Policy() (*policy.Policy, error)
	Pending() ([]record.Decision, error)
	Select(ids []string, f Filter) ([]record.Decision, error)
	ShortIDs(ids []string) (map[string]string, error)
	ShowFull(id string) (*record.Decision, []byte, *ShowContext, error)
	ApproveWith(id, reviewer string, opts ApproveOptions) (*record.Decision, error)
	ApproveAll(ids []string, reviewer string, opts ApproveOptions) []BatchItem
	RejectPending(id, reviewer, reason string) (*record.Decision, error)
	RejectAll(ids []string, reviewer, reason string) []BatchItem
	EditReviewers(op, name, by string) (string, []string, error)
	VerifyAudit() *AuditResult
	Reverify(ref, reviewer string) (*sweep.ReverifyResult, error)
}

// Serve listens on the review socket at path until ctx ends, answering
// each request from d. Authorisation is
// by the peer's credentials from the kernel (SO_PEERCRED), never by anything
// the client says: the uid must be a policy reviewer, and the peer must live
// in the gate's own user and mount namespaces — a process inside a sandbox
// (its own user namespace) is refused even if its uid maps to a reviewer.
func Serve(ctx context.Context, path string, d Desk) error {
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("review socket: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return err
	}
	go func() { <-ctx.Done(); l.Close() }()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go serveConn(d, c.(*net.UnixConn))
	}
}

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return nil, err
	}
	return cred, cerr
}

// sameNamespaces reports whether pid shares our user and mount namespaces.
//
// The namespace links of another uid's process are unreadable to the gate
// (they need ptrace access), and a reviewer is normally another uid. Then
// the pid namespace tells instead, from /proc/<pid>/status, which anyone
// may read: a peer whose NSpid line has more entries than ours lives in a
// nested pid namespace — every fedmem sandbox has one — and is refused.
func sameNamespaces(pid int32) bool {
	for _, ns := range []string{"user", "mnt"} {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err1 == nil && errors.Is(err2, os.ErrPermission) {
			return samePIDNamespaceDepth(pid)
		}
		if err1 != nil || err2 != nil || mine != theirs {
			return false
		}
	}
	return true
}

func samePIDNamespaceDepth(pid int32) bool {
	mine, err1 := nspidDepth("/proc/self/status")
	theirs, err2 := nspidDepth(fmt.Sprintf("/proc/%d/status", pid))
	return err1 == nil && err2 == nil && mine == theirs
}

// nspidDepth counts the pids on the NSpid line of a /proc status file: one
// per pid namespace from the /proc mount's down to the process's own.
func nspidDepth(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "NSpid:"); ok {
			return len(strings.Fields(rest)), nil
		}
	}
	return 0, errors.New("no NSpid line")
}

func serveConn(d Desk, c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	resp := handle(d, c)
	_ = json.NewEncoder(c).Encode(resp)
}

func handle(d Desk, c *net.UnixConn) Response {
	// Read the request before judging the peer, so that a refusal is an
	// answer the client reads, not a connection closed under its write.
	var req Request
	reqErr := json.NewDecoder(io.LimitReader(bufio.NewReader(c), maxRequest)).Decode(&req)
	cred, err := peerCred(c)
	if err != nil {
		return Response{Error: "cannot read peer credentials: " + err.Error()}
	}
	if !sameNamespaces(cred.Pid) {
		d.Note("review-refused", map[string]any{"uid": cred.Uid, "pid": cred.Pid, "why": "namespace"})
		return Response{Error: "requests from another user or mount namespace (a sandbox) are refused"}
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(int(cred.Uid))); err == nil {
		name = u.Username
	}
	pol, err := d.Policy()
	if err != nil {
		return Response{Error: "policy: " + err.Error()}
	}
	if !pol.IsReviewer(int(cred.Uid), name) {
		d.Note("review-refused", map[string]any{"uid": cred.Uid, "name": name, "why": "not a reviewer"})
		return Response{Error: fmt.Sprintf("uid %d (%s) is not a reviewer in the policy", cred.Uid, name)}
	}
	if name == "" {
		name = "uid-" + strconv.Itoa(int(cred.Uid))
	}
	if reqErr != nil {
		return Response{Error: "bad request: " + reqErr.Error()}
	}
	r := Response{Reviewer: name}
	switch {
	case req.Op == "list":
		r.Decisions, err = d.Pending()
		if err == nil {
			r.Short, err = d.ShortIDs(IDs(r.Decisions))
		}
	case req.Op == "select":
		var f Filter
		if req.Filter != nil {
			f = *req.Filter
		}
		r.Decisions, err = d.Select(req.IDs, f)
		if err == nil {
			r.Short, err = d.ShortIDs(IDs(r.Decisions))
		}
	case req.Op == "show":
		var b []byte
		r.Decision, b, r.Context, err = d.ShowFull(req.ID)
		r.Draft = string(b)
	case (req.Op == "approve" || req.Op == "reject") && len(req.IDs) > 0:
		r.Batch, err = serveBatch(d, c, req, name)
	case req.Op == "approve":
		r.Decision, err = d.ApproveWith(req.ID, name, ApproveOptions{Supersede: req.Supersede, Title: req.Title})
	case req.Op == "reject":
		r.Decision, err = d.RejectPending(req.ID, name, req.Reason)
	case req.Op == "reviewers":
		r.Commit, r.Reviewers, err = d.EditReviewers(req.Change, req.Reviewer, name)
	case req.Op == "audit-verify":
		r.Audit = d.VerifyAudit()
	case req.Op == "reverify":
		r.Reverify, err = d.Reverify(req.ID, name)
	default:
		err = fmt.Errorf("unknown op %q (list, show, select, approve, reject, reverify, reviewers, audit-verify)", req.Op)
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.OK = true
	return r
}

// maxRequest bounds a review request (a batch of MaxBatch full ids fits).
const maxRequest = 1 << 20

// serveBatch decides a batch of full ids (the gate's reviewbatch.go). A batch commits
// once per draft, so the connection's deadline grows with its size.
func serveBatch(d Desk, c *net.UnixConn, req Request, reviewer string) ([]BatchItem, error) {
	if len(req.IDs) > MaxBatch {
		return nil, fmt.Errorf("%d ids in one batch; at most %d", len(req.IDs), MaxBatch)
	}
	_ = c.SetDeadline(time.Now().Add(30*time.Second + time.Duration(len(req.IDs))*time.Second))
	var items []BatchItem
	if req.Title != "" {
		return nil, errors.New("--title names one note: give it with one id, not a batch")
	}
	if req.Op == "approve" {
		items = d.ApproveAll(req.IDs, reviewer, ApproveOptions{Supersede: req.Supersede})
	} else {
		items = d.RejectAll(req.IDs, reviewer, req.Reason)
	}
	if n := BatchFailed(items); n > 0 {
		return items, fmt.Errorf("%d of %d drafts not decided", n, len(items))
	}
	return items, nil
}

// IDs are the ids of ds, in order.
func IDs(ds []record.Decision) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}
