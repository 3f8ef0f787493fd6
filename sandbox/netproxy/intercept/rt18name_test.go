package intercept

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestRT18PlaceholderInHeaderName: the placeholder sent as a header's
// name — in a plain-HTTP request to another host (as sent, and as Go's
// client canonicalises it), and on an intercepted connection in a header
// other than its credential's — is refused and reported as a credential
// event, as it is in a value. Fails on da0ef2c: the proxy and the
// interceptor searched header values only (the other host answered, and
// so did the credential's host).
func TestRT18PlaceholderInHeaderName(t *testing.T) {
	r := newRig(t)
	// As sent: a raw request keeps the name's case (net/http's client
	// would canonicalise it); the proxy's reader canonicalises it too.
	c, err := net.Dial("tcp", r.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n"+placeholder+": 1\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("raw: %d %q", resp.StatusCode, b)
		if resp.StatusCode == 200 {
			t.Errorf("the placeholder as a header name went to another host (raw request)")
		}
	}
	if code, body := r.do(t, "GET", "http://other.test/", map[string]string{placeholder: "1"}, ""); code == 200 {
		t.Errorf("the placeholder as a header name went to another host: %d %s", code, body)
	}
	if code, body := r.do(t, "GET", "https://api.test/v1/models", map[string]string{placeholder: "1"}, ""); code == 200 {
		t.Errorf("the placeholder as a header name went to the credential's host in another header: %d %s", code, body)
	}
	if n := r.otherHits.Load(); n != 0 {
		t.Errorf("the other host answered %d request(s) carrying the placeholder as a header name", n)
	}
	if n := r.apiHits.Load(); n != 0 {
		t.Errorf("the api host answered %d request(s) carrying the placeholder as a header name", n)
	}
	evs, refusals := r.evs()
	all := strings.Join(refusals, "\n")
	for _, e := range evs {
		if e.Name == "credential" {
			all += "\n" + e.Fields["credential"].(string) + " " + e.Fields["where"].(string)
		}
	}
	if n := strings.Count(all, "anthropic-api-key"); n < 3 {
		t.Errorf("want 3 refusals naming the credential, got %d:\n%s", n, all)
	}
	if !strings.Contains(all, "header name") {
		t.Errorf("no refusal says where (a header name):\n%s", all)
	}
}
