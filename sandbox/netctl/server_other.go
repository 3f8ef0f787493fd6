//go:build !linux

package netctl

import "errors"

// Server is a session's control socket: Linux only (SO_PEERCRED).
type Server struct{}

// Listen is not available off Linux.
func Listen(uid int, session string) (*Server, error) {
	return nil, errors.New("the control socket needs Linux (SO_PEERCRED)")
}

// Path is "".
func (s *Server) Path() string { return "" }

// Serve returns at once.
func (s *Server) Serve(allow func(host string, p Peer) (string, error), refused func(p Peer, rule, why string)) {
}

// Close does nothing.
func (s *Server) Close() {}
