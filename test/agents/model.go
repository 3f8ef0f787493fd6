package agents

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ToolCall is one tool use the scripted model asks for.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// ToolResult is what the agent sent back for one tool use.
type ToolResult struct {
	ID      string
	IsError bool
	Content string
}

// Step computes the next tool call from the results so far (a later step
// may use what an earlier command printed, e.g. $FEDMEM_INBOX).
type Step func(prev []ToolResult) ToolCall

// Model is a scripted model behind an Anthropic-Messages-API-compatible
// endpoint (POST /v1/messages, streaming SSE as Claude Code reads it, or
// plain JSON). The main conversation (a request that offers tools) gets
// Script[n] where n is the number of tool results the conversation holds
// so far; past the script it ends the turn with the text Done. Side
// requests (no tools: titles, summaries) get a short text.
type Model struct {
	Script []Step
	Done   string

	mu      sync.Mutex
	results []ToolResult
	turns   int
	ln      net.Listener
	srv     *http.Server
	keys    map[string]bool // x-api-key and Authorization values received
	tlsCert *tls.Certificate
}

// Start listens on 127.0.0.1 and serves until Close.
func (m *Model) Start() (string, error) { return m.listen(m.serve) }

// StartTLS is Start over TLS, with a certificate for 127.0.0.1 from a test
// CA standing in for the public roots: the CA's PEM is written to
// dir/test-roots.pem, returned for the caller's SSL_CERT_FILE (fedmem-run's
// credential helper verifies the model against it).
func (m *Model) StartTLS(dir string) (string, string, error) { return m.listenTLS(m.serve, dir) }

func (m *Model) listenTLS(h http.HandlerFunc, dir string) (string, string, error) {
	cert, caPEM, err := testServerCert()
	if err != nil {
		return "", "", err
	}
	roots := filepath.Join(dir, "test-roots.pem")
	if err := os.WriteFile(roots, caPEM, 0o644); err != nil {
		return "", "", err
	}
	m.tlsCert = cert
	addr, err := m.listen(h)
	return addr, roots, err
}

func testServerCert() (*tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fedmem agents test roots"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(2 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, nil, err
	}
	lkey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(2 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &lkey.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: lkey}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// Keys are the x-api-key and Authorization values the model received.
func (m *Model) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.keys {
		out = append(out, k)
	}
	return out
}

func (m *Model) listen(h http.HandlerFunc) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	if m.tlsCert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*m.tlsCert}})
	}
	m.ln = ln
	m.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		if m.keys == nil {
			m.keys = map[string]bool{}
		}
		for _, k := range []string{r.Header.Get("X-Api-Key"), r.Header.Get("Authorization")} {
			if k != "" {
				m.keys[k] = true
			}
		}
		m.mu.Unlock()
		h(w, r)
	})}
	go m.srv.Serve(ln)
	return ln.Addr().String(), nil
}

// Close stops the server.
func (m *Model) Close() { m.srv.Close() }

// Results are the tool results the agent sent, in order, deduplicated by
// tool-use id.
func (m *Model) Results() []ToolResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ToolResult{}, m.results...)
}

// Turns is the number of main-conversation requests answered.
func (m *Model) Turns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns
}

type request struct {
	Stream   bool                    `json:"stream"`
	Tools    []struct{ Name string } `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type block struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

// readJSON decodes a request body (up to 64 MiB) into v; on failure it
// answers 400 and returns false. Both model servers read their requests so.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		http.Error(w, err.Error(), 400)
		return false
	}
	return true
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.HasSuffix(r.URL.Path, "count_tokens") {
		if strings.HasSuffix(r.URL.Path, "count_tokens") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"input_tokens":100}`)
			return
		}
		http.NotFound(w, r)
		return
	}
	var req request
	if !readJSON(w, r, &req) {
		return
	}
	main := false
	for _, t := range req.Tools {
		if t.Name == "Bash" || t.Name == "Write" {
			main = true
		}
	}
	n := 0
	if main {
		m.mu.Lock()
		seen := map[string]bool{}
		for _, r := range m.results {
			seen[r.ID] = true
		}
		for _, msg := range req.Messages {
			var blocks []block
			if msg.Role != "user" || json.Unmarshal(msg.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if b.Type != "tool_result" {
					continue
				}
				n++
				if !seen[b.ToolUseID] {
					seen[b.ToolUseID] = true
					m.results = append(m.results, ToolResult{ID: b.ToolUseID, IsError: b.IsError, Content: text(b.Content)})
				}
			}
		}
		m.turns++
		m.mu.Unlock()
	}
	var content []map[string]any
	stop := "end_turn"
	switch {
	case main && n < len(m.Script):
		c := m.Script[n](m.Results())
		content = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", n+1), "name": c.Name, "input": c.Input}}
		stop = "tool_use"
	case main:
		content = []map[string]any{{"type": "text", "text": m.Done}}
	default:
		content = []map[string]any{{"type": "text", "text": "ok"}}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted",
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 10, "output_tokens": 10},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_scripted", "type": "message", "role": "assistant", "model": "scripted", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	for i, c := range content {
		if c["type"] == "tool_use" {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(c["input"])
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		} else {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 10}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}
