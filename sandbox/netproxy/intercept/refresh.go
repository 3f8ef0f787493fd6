package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// maxRefreshBody bounds the bodies the interceptor reads whole: requests
// to a host of a body credential (token endpoints) and refresh answers.
const maxRefreshBody = 1 << 20

type refreshKey struct{}

// refreshReq is a refresh's context value: the credential whose
// placeholder the request carried, and what the agent itself sent (its
// URL, headers and body before the placeholders were replaced): a value
// of the answer found there is the agent's own, echoed — never a new
// token (TestRT18RefreshFromEcho).
type refreshReq struct {
	from string
	sent []byte
}

// injectBody replaces, in the body of a request to a host of a body
// credential (Cred.Body: a refresh token sent to its token endpoint),
// that credential's placeholder with its real value. A request that
// carried one is a refresh: its context names the credential, whose
// siblings' new values the answer holds (refreshed).
func (s *Server) injectBody(r *http.Request, host string, port int) (*http.Request, error) {
	var mine []Cred
	for _, c := range s.creds() {
		if c.Body && allowed(&c, host, port) {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 || r.Body == nil || r.Body == http.NoBody {
		return r, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRefreshBody+1))
	r.Body.Close()
	if err != nil {
		return r, err
	}
	if len(b) > maxRefreshBody {
		return r, fmt.Errorf("a request body to %s larger than %d bytes (a host of a body credential)", host, maxRefreshBody)
	}
	from := ""
	sent := append([]byte(nil), b...)
	for _, c := range mine {
		if bytes.Contains(b, []byte(c.Placeholder)) {
			b = bytes.ReplaceAll(b, []byte(c.Placeholder), []byte(c.Real))
			from = c.Name
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	if from != "" {
		sent = append(sent, r.URL.String()...)
		for k, vs := range r.Header {
			sent = append(sent, k...)
			for _, v := range vs {
				sent = append(sent, v...)
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), refreshKey{}, &refreshReq{from: from, sent: sent}))
	}
	return r, nil
}

// refreshed reads a refresh's JSON answer: each credential of the same
// source file as from whose FromResponse field it holds gets that value as
// its new real one (injected from now on, reported to fedmem-run for the
// file after the session), and the agent gets the placeholder in its
// place.
func (s *Server) refreshed(r *http.Response, req *refreshReq) {
	from := req.from
	if r.StatusCode != http.StatusOK || r.Body == nil {
		return
	}
	// An answer the refresh cannot read (not JSON) is withheld: it may
	// hold new real tokens this code would not know to replace.
	withhold := func() {
		r.Body.Close()
		msg := []byte(`{"error": "fedmem: the answer to a credential refresh could not be read as JSON: withheld (it may hold new real tokens)"}`)
		r.StatusCode, r.Status = http.StatusBadGateway, "502 Bad Gateway"
		r.Header.Set("Content-Type", "application/json")
		r.Body = io.NopCloser(bytes.NewReader(msg))
		r.ContentLength = int64(len(msg))
		r.Header.Set("Content-Length", strconv.Itoa(len(msg)))
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		withhold()
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRefreshBody+1))
	r.Body.Close()
	keep := func(b []byte) {
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	}
	var doc map[string]any
	if err != nil || len(b) > maxRefreshBody || json.Unmarshal(b, &doc) != nil {
		withhold()
		return
	}
	s.credMu.Lock()
	file := ""
	for _, c := range s.Creds {
		if c.Name == from {
			file = c.File
		}
	}
	var updated []netproxy.HelperCred
	for i := range s.Creds {
		c := &s.Creds[i]
		if c.FromResponse == "" || c.File != file {
			continue
		}
		v, ok := doc[c.FromResponse].(string)
		if !ok || v == "" || bytes.Contains(req.sent, []byte(v)) {
			continue // absent, or the agent's own value echoed
		}
		if v != c.Real {
			s.retired = append(s.retired, *c)
		}
		c.Real = v
		doc[c.FromResponse] = c.Placeholder
		updated = append(updated, *c)
	}
	if len(updated) > 0 {
		s.scrub = nil // new values: the scrub is built again
	}
	s.credMu.Unlock()
	if len(updated) == 0 {
		keep(b)
		return
	}
	out, err := json.Marshal(doc)
	if err != nil {
		keep(b)
		return
	}
	keep(out)
	for _, c := range updated {
		s.event(netproxy.HelperRefreshed, map[string]any{"credential": c.Name, "value": c.Real})
		s.event("credential", map[string]any{"credential": c.Name, "allowed": true, "where": "a refresh's " + c.FromResponse,
			"reason": "credential " + c.Name + " refreshed: the new value is injected from now on and stored in its file after the session; the agent holds the placeholder"})
	}
}
