package agents

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// ResponsesModel is the scripted model of Model behind an OpenAI Responses
// API endpoint (POST /v1/responses, streamed as server-sent events), as
// Codex CLI speaks it. A request that offers the function Tool is the main
// conversation: it gets Script[n], n being the number of
// function_call_output items its input holds, as one function_call item
// whose arguments are the step's Input; past the script it ends the turn
// with an assistant message Done. Other requests get a short message.
//
// The tool results are the function_call_output items Codex sends back;
// IsError is set when the output does not say the process exited with
// code 0 (Codex 0.171's exec_command writes "Process exited with code N").
// A command still running when exec_command returns ("Process running
// with session ID N") is polled with write_stdin before the script goes
// on, as a model would; the polls' outputs join the command's result.
type ResponsesModel struct {
	Model
	// Tool is the function a main-conversation request offers
	// ("exec_command" for Codex 0.171's unified exec).
	Tool string

	requests []string // one line per request, for the test's log
}

// Start listens on 127.0.0.1 and serves until Close.
func (m *ResponsesModel) Start() (string, error) { return m.listen(m.serve) }

// StartTLS is Start over TLS (Model.StartTLS).
func (m *ResponsesModel) StartTLS(dir string) (string, string, error) {
	return m.listenTLS(m.serve, dir)
}

// Requests lists every request the server got: method, path, whether it
// was the main conversation and how many tool results it carried.
func (m *ResponsesModel) Requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string{}, m.requests...)
}

type responsesRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Input []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
}

var (
	exitedWith   = regexp.MustCompile(`Process exited with code (-?\d+)`)
	stillRunning = regexp.MustCompile(`Process running with session ID (\d+)`)
)

func (m *ResponsesModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		m.mu.Lock()
		m.requests = append(m.requests, r.Method+" "+r.URL.Path+" (404)")
		m.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	var req responsesRequest
	if !readJSON(w, r, &req) {
		return
	}
	main := false
	for _, t := range req.Tools {
		if t.Type == "function" && t.Name == m.Tool {
			main = true
		}
	}
	// The tool results, rebuilt from the whole history each request
	// carries: a command still running when exec_command returned is
	// polled with write_stdin, and the polls' outputs join its result.
	var res []ToolResult
	poll := ""
	for _, in := range req.Input {
		if in.Type != "function_call_output" {
			continue
		}
		out := text(in.Output)
		if poll != "" && len(res) > 0 {
			res[len(res)-1].Content += out
		} else {
			res = append(res, ToolResult{ID: in.CallID, Content: out})
		}
		last := &res[len(res)-1]
		poll = ""
		if s := stillRunning.FindStringSubmatch(out); s != nil {
			poll = s[1]
		}
		last.IsError = true
		if c := exitedWith.FindStringSubmatch(out); c != nil {
			last.IsError = c[1] != "0"
		}
	}
	if poll != "" {
		res = res[:len(res)-1]
	}
	n := len(res)
	m.mu.Lock()
	if main {
		if len(res) >= len(m.results) {
			m.results = res
		}
		m.turns++
	}
	m.requests = append(m.requests, fmt.Sprintf("%s %s main=%v tool_results=%d poll=%q stream=%v", r.Method, r.URL.Path, main, n, poll, req.Stream))
	m.mu.Unlock()

	id := fmt.Sprintf("resp_%02d", n+1)
	var item map[string]any
	switch {
	case main && poll != "":
		sid, _ := strconv.Atoi(poll)
		args, _ := json.Marshal(map[string]any{"session_id": sid, "chars": "", "yield_time_ms": 30000})
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%02d_poll_%d", n+1, len(req.Input)), "call_id": fmt.Sprintf("call_%02d_poll_%d", n+1, len(req.Input)),
			"name": "write_stdin", "arguments": string(args), "status": "completed"}
	case main && n < len(m.Script):
		c := m.Script[n](m.Results())
		args, _ := json.Marshal(c.Input)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%02d", n+1), "call_id": fmt.Sprintf("call_%02d", n+1),
			"name": c.Name, "arguments": string(args), "status": "completed"}
	case main:
		item = message(fmt.Sprintf("msg_%02d", n+1), m.Done)
	default:
		item = message("msg_side", "ok")
	}
	usage := map[string]any{"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 10, "output_tokens_details": nil, "total_tokens": 20}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "response", "status": "completed", "model": "scripted",
			"output": []any{item}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	ev := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		if fl != nil {
			fl.Flush()
		}
	}
	ev(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress"}})
	if item["type"] == "function_call" {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		ev(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added})
		ev(map[string]any{"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": item["id"], "delta": item["arguments"]})
		ev(map[string]any{"type": "response.function_call_arguments.done", "output_index": 0, "item_id": item["id"], "arguments": item["arguments"]})
	} else {
		ev(map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "id": item["id"], "role": "assistant", "status": "in_progress", "content": []any{}}})
		ev(map[string]any{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": item["id"],
			"delta": item["content"].([]any)[0].(map[string]any)["text"]})
	}
	ev(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	ev(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "object": "response", "status": "completed", "usage": usage}})
}

func message(id, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}
