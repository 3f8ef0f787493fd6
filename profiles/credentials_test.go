package profiles

import (
	"strings"
	"testing"
)

func TestCredentialsParse(t *testing.T) {
	p, err := Parse("p.yaml", []byte("name: p\ncredentials:\n  - name: k\n    env: MY_KEY\n    hosts: [api.example.com]\n    header: \"Authorization: Bearer\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Credentials[0]
	if c.Where != "p.yaml:3" || c.HeaderName() != "Authorization" || c.Scheme() != "Bearer" {
		t.Fatalf("%+v %s %s", c, c.HeaderName(), c.Scheme())
	}
	if r, _ := c.HostRules(); r[0].Port != 443 {
		t.Fatalf("default port: %v", r)
	}
}

// TestCredentialsErrors: each bad entry is refused with the file, line and
// what is wrong.
func TestCredentialsErrors(t *testing.T) {
	for body, want := range map[string]string{
		"  - {name: k, env: A, file: ~/x, path: a, hosts: [h.com], header: x}": "p.yaml:3: credentials[0] \"k\": needs exactly one source",
		"  - {name: k, hosts: [h.com], header: x}":                             "needs exactly one source",
		"  - {name: k, file: ~/x, hosts: [h.com], header: x}":                  "needs path:",
		"  - {name: k, env: A, hosts: [h.com]}":                                "hosts need header",
		"  - {name: k, env: A, header: x}":                                     "without hosts",
		"  - {name: k, env: A, hosts: [\"*\"], header: x}":                     "hosts:",
		"  - {name: k, env: A, hosts: [h.com], header: x, basic_auth: true}":   "one way to travel",
		"  - {name: k, file: x.json, path: a, hosts: [h.com], header: x}":      "must be ~/",
		"  - {name: k, env: A}\n  - {name: k, env: B}":                         "p.yaml:4: credentials[1] \"k\": a second credential",
		"  - {name: k, env: A, path: a.b}":                                     "path: is for a file source",
		"  - {name: k, env: A, hostz: [x]}":                                    "p.yaml:3: credentials[0].name: credentials entry key \"hostz\"",
	} {
		p, err := Parse("p.yaml", []byte("name: p\ncredentials:\n"+body+"\n"))
		if err == nil {
			p.setDefaults()
			err = p.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %q", body, err, want)
		}
	}
}

func TestBuiltinCredentials(t *testing.T) {
	for name, want := range map[string]string{"claude": "anthropic-api-key", "codex": "openai-api-key"} {
		p, _, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range p.Credentials {
			found = found || c.Name == want
			if !strings.HasPrefix(c.Where, "builtin:"+name+":") {
				t.Errorf("%s: where %q", c.Name, c.Where)
			}
		}
		if !found {
			t.Errorf("%s: no %s credential", name, want)
		}
	}
}
