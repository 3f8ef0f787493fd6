package netproxy

// The protocol between fedmem-run and its credential helper
// (cmd/fedmem-cred, package intercept), defined once here: fedmem-run
// writes one HelperConfig as JSON on the helper's stdin and closes it; the
// helper answers with one HelperHello line on its stdout, then HelperEvent
// lines. Each intercepted connection is one Handoff message (JSON) on a
// SOCK_SEQPACKET socket (the helper's fd 3) carrying the connection's
// descriptor (SCM_RIGHTS). The helper ends when that socket closes.

// HelperCred is one credential as the helper needs it: its real value
// travels only on the config pipe, never on a command line or in an
// environment.
type HelperCred struct {
	Name        string `json:"name"`
	Placeholder string `json:"placeholder"`
	Real        string `json:"real"`
	// Header carries the value (case-insensitive name); Basic: the
	// password of Authorization: Basic.
	Header string `json:"header,omitempty"`
	Basic  bool   `json:"basic,omitempty"`
	Hosts  []Rule `json:"hosts,omitempty"`
	// Body: replaced in request bodies to Hosts too; a request that
	// carries it is a refresh, whose JSON answer's FromResponse fields
	// are new values.
	Body         bool   `json:"body,omitempty"`
	FromResponse string `json:"from_response,omitempty"`
	// File groups the credentials of one source file (a refresh answers
	// for all of them); empty for an env source.
	File string `json:"file,omitempty"`
}

// HelperRefreshed is the name of the helper's line that carries a
// credential's new real value after a refresh (Fields: credential,
// value). fedmem-run keeps it for the source file and never writes it to
// the session's events.
const HelperRefreshed = "fedmem-cred-refreshed"

// HelperConfig is the helper's whole configuration.
type HelperConfig struct {
	Session string       `json:"session"`
	Creds   []HelperCred `json:"creds"`
}

// HelperHello is the helper's first line: the session CA's certificate
// (PEM); its key never leaves the helper.
type HelperHello struct {
	CAPEM string `json:"ca_pem,omitempty"`
	Error string `json:"error,omitempty"`
}

// HelperEvent is one of the helper's events for the session's --events.
type HelperEvent struct {
	Name   string         `json:"event"`
	Fields map[string]any `json:"fields"`
}

// Handoff names an intercepted connection: the CONNECT target, the
// addresses the policy checked (the only ones the helper dials) and bytes
// the agent sent after the CONNECT head.
type Handoff struct {
	Host  string   `json:"host"`
	Port  int      `json:"port"`
	Addrs []string `json:"addrs"`
	Pre   []byte   `json:"pre,omitempty"`
}
