package intercept

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

func BenchmarkScrub(b *testing.B) {
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}, {Name: "t", Placeholder: phTok, Real: realTok},
		// make bench's key (test/bench/cred.go)
		{Name: "b", Placeholder: "sk-bench-api03-PHphPHphPHphPHphPHphPHphPHphPHphPHphPHphPHph", Real: "sk-bench-api03-0123456789abcdefghijklmnopqrstuvwxyzABCDEF"}}}
	sc := s.scrubber()
	b.Logf("%d forms, w=%d st=%d", len(sc.pairs), sc.w, sc.st)
	rnd := make([]byte, 256<<10)
	rand.Read(rnd)
	for _, d := range []struct {
		name string
		b    []byte
	}{{"zero", make([]byte, 256<<10)}, {"random", rnd}, {"text", bytes.Repeat([]byte(`{"type":"content_block_delta","delta":{"text":"some words here"}}`+"\n"), 4000)}} {
		b.Run("filter/"+d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.b)))
			for i := 0; i < b.N; i++ {
				sc.scrub(d.b)
			}
		})
		b.Run("index1/"+d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.b)))
			for i := 0; i < b.N; i++ {
				bytes.Index(d.b, []byte(realKey))
			}
		})
	}
}

// TestScrubEveryOffset: the sampled search finds a form wherever it
// begins (every offset against the sampling stride), in either case, at
// the end of the text too, and leaves the text around it as it was.
func TestScrubEveryOffset(t *testing.T) {
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}, {Name: "t", Placeholder: phTok, Real: realTok}}}
	sc := s.scrubber()
	filler := make([]byte, 300)
	rand.Read(filler)
	for _, form := range []string{realKey, strings.ToUpper(realKey), reverse(realTok), hex.EncodeToString([]byte(realTok))} {
		for off := 0; off < 2*sc.st+3; off++ {
			for _, tail := range []int{0, 1, 7, 40} {
				text := append(append(append([]byte{}, filler[:off]...), form...), filler[:tail]...)
				sc.scrub(text)
				if bytes.Contains(bytes.ToLower(text), bytes.ToLower([]byte(form))) {
					t.Fatalf("form %q at %d (tail %d) not found", form, off, tail)
				}
				if !bytes.Equal(text[:off], filler[:off]) || !bytes.Equal(text[off+len(form):], filler[:tail]) {
					t.Fatalf("the text around form %q at %d changed", form, off)
				}
			}
		}
	}
}
