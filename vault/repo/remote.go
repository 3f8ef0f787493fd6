package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Remote is one branch of a remote repository, fetched into a
// remote-tracking ref (refs/remotes/<name>/<branch>) and pushed to with a
// compare-and-swap on the remote side.
type Remote struct {
	g         *Repo
	name      string
	remoteRef RefName
	track     RefName
	spec      config.RefSpec
	rem       *git.Remote
	auth      *remoteAuth
	run       func(what string, op func(ctx context.Context) error) error
}

// TrackRef is the remote-tracking ref of branch on remote name.
func TrackRef(name, branch string) RefName {
	return plumbing.ReferenceName("refs/remotes/" + name + "/" + branch)
}

// Remote opens branch of the remote at url under the name name. Every
// fetch and push runs through run (the gate's deadline: what names the
// operation), once per attempt at credentials.
func (g *Repo) Remote(name, url, branch string, run func(what string, op func(ctx context.Context) error) error) *Remote {
	remoteRef := plumbing.NewBranchReferenceName(branch)
	track := TrackRef(name, branch)
	spec := config.RefSpec("+" + remoteRef.String() + ":" + track.String())
	rem := git.NewRemote(g.s, &config.RemoteConfig{Name: name, URLs: []string{url}, Fetch: []config.RefSpec{spec}})
	return &Remote{g: g, name: name, remoteRef: remoteRef, track: track, spec: spec, rem: rem, auth: &remoteAuth{url: url}, run: run}
}

// Fetch brings the remote branch into the tracking ref and returns its tip
// (zero when the remote has no such branch yet).
func (rm *Remote) Fetch() (Hash, error) {
	err := rm.auth.do(func(a transport.AuthMethod) error {
		return rm.run("fetch", func(ctx context.Context) error {
			return rm.rem.FetchContext(ctx, &git.FetchOptions{RemoteName: rm.name, RefSpecs: []config.RefSpec{rm.spec}, Auth: a, Tags: git.NoTags, Force: true})
		})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.Is(err, git.NoMatchingRefSpecError{}):
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, err
	}
	ref, err := rm.g.s.Reference(rm.track)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", rm.track, err)
	}
	return ref.Hash(), nil
}

// Push sends the local branch lb to the remote branch, allowed only while
// the remote branch is still at expect (zero: absent).
func (rm *Remote) Push(lb RefName, expect Hash) error {
	opts := &git.PushOptions{RemoteName: rm.name, RefSpecs: []config.RefSpec{config.RefSpec(lb.String() + ":" + rm.remoteRef.String())}}
	if !expect.IsZero() {
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(expect.String() + ":" + rm.remoteRef.String())}
	}
	err := rm.auth.do(func(a transport.AuthMethod) error {
		opts.Auth = a
		return rm.run("push", func(ctx context.Context) error { return rm.rem.PushContext(ctx, opts) })
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// Tracked records that the remote branch is at h (after a push).
func (rm *Remote) Tracked(h Hash) error { return rm.g.SetRef(rm.track, h) }

// remoteAuth supplies credentials from the gate user's own configuration:
// none for file:// and git://; SSH agent or the user's default key (with
// ~/.ssh/known_hosts) for ssh; for http(s), `git credential fill` when the
// server asks (the user's credential helpers), approved or rejected after.
type remoteAuth struct {
	url    string
	filled transport.AuthMethod
	ssh    transport.AuthMethod
}

func (a *remoteAuth) do(f func(transport.AuthMethod) error) error {
	ep, err := transport.NewEndpoint(a.url)
	if err != nil {
		return err
	}
	switch ep.Protocol {
	case "ssh":
		if a.ssh == nil {
			if a.ssh, err = sshAuth(ep.User); err != nil {
				return err
			}
		}
		return f(a.ssh)
	case "http", "https":
		err := f(a.filled)
		if a.filled != nil || !(errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)) {
			return err
		}
		cred, ferr := credential("fill", ep, nil)
		if ferr != nil {
			return fmt.Errorf("%w (no credentials from the gate user's git credential helpers: %v)", err, ferr)
		}
		a.filled = &githttp.BasicAuth{Username: cred["username"], Password: cred["password"]}
		err = f(a.filled)
		if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
			_, _ = credential("reject", ep, cred)
		} else if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			_, _ = credential("approve", ep, cred)
		}
		return err
	}
	return f(nil)
}

func sshAuth(user string) (transport.AuthMethod, error) {
	if user == "" {
		user = "git"
	}
	if os.Getenv("SSH_AUTH_SOCK") != "" {
		if a, err := gitssh.NewSSHAgentAuth(user); err == nil {
			return a, nil
		}
	}
	home, _ := os.UserHomeDir()
	for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := filepath.Join(home, ".ssh", k)
		if _, err := os.Stat(p); err == nil {
			return gitssh.NewPublicKeysFromFile(user, p, "")
		}
	}
	return nil, errors.New("no SSH agent and no ~/.ssh/id_ed25519, id_ecdsa or id_rsa for the gate user")
}

// credential runs `git credential <op>` for the endpoint, never prompting.
func credential(op string, ep *transport.Endpoint, cred map[string]string) (map[string]string, error) {
	host := ep.Host
	if ep.Port != 0 {
		host += ":" + strconv.Itoa(ep.Port)
	}
	var in strings.Builder
	fmt.Fprintf(&in, "protocol=%s\nhost=%s\npath=%s\n", ep.Protocol, host, strings.TrimPrefix(ep.Path, "/"))
	for _, k := range []string{"username", "password"} {
		if v, ok := cred[k]; ok {
			fmt.Fprintf(&in, "%s=%s\n", k, v)
		}
	}
	in.WriteString("\n")
	cmd := exec.Command("git", "credential", op)
	cmd.Stdin = strings.NewReader(in.String())
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git credential %s: %v", op, err)
	}
	res := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			res[k] = v
		}
	}
	if op == "fill" && res["password"] == "" {
		return nil, errors.New("git credential fill returned no password")
	}
	return res, nil
}
