package resolve

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainHomeTable: `fedmem profile explain` and `fedmem-run
// --explain` show the allow-list home's table (text and JSON key home)
// and count the sockets the start-time scan masks in the workdir.
func TestExplainHomeTable(t *testing.T) {
	home, wd := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = u\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(wd, "daemon.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := Resolve(Options{Profile: "default", Placeholder: "/path/to/vault", Workdir: wd, Session: "SESSION", Caller: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Explain(&out, s, ExplainOptions{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, w := range []string{"an allow-list", "~/.gitconfig", "profile: home.show", "sockets and FIFOs masked: 1"} {
		if !strings.Contains(text, w) {
			t.Errorf("explain does not say %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "~/.ssh") {
		t.Errorf("explain lists ~/.ssh in an allow-list home:\n%s", text)
	}
	out.Reset()
	if err := Explain(&out, s, ExplainOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Home []struct{ Path, Access string } `json:"home"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Home) == 0 || j.Home[0].Path != ".gitconfig" || j.Home[0].Access != "ro" {
		t.Errorf("JSON home table: %+v", j.Home)
	}
}
