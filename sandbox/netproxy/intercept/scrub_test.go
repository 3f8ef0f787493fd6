package intercept

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
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

// TestScrubReadSizes: whatever the size of the reader's buffer (smaller
// than a record: through scrubBody's own; room for one: straight into the
// caller's) and of the upstream's reads, every real value and its forms
// split across reads come out masked, the cut tail too, and nothing else
// changes.
func TestScrubReadSizes(t *testing.T) {
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}}}
	hexReal, hexMask := hex.EncodeToString([]byte(realKey)), hex.EncodeToString([]byte(placeholder))
	body := strings.Repeat("a", 30000) + realKey + "b" + hexReal + strings.Repeat("c", 20000) + realKey + realKey[:20]
	want := strings.Repeat("a", 30000) + placeholder + "b" + hexMask + strings.Repeat("c", 20000) + placeholder + placeholder[:20]
	for _, psize := range []int{1, 100, maxRecord + 100, 256 << 10} {
		for _, piece := range []int{1, 7, 100, 5000, 1 << 20} {
			for _, arrived := range []bool{false, true} {
				resp := &http.Response{Header: http.Header{}, Body: &pieces{s: []byte(body), k: piece}}
				s.scrubResponse(resp)
				resp.Body.(*scrubBody).more = func() bool { return arrived }
				var got []byte
				p := make([]byte, psize)
				for {
					n, err := resp.Body.Read(p)
					got = append(got, p[:n]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if string(got) != want {
					t.Fatalf("buffer %d, pieces of %d, arrived %v: %d bytes, differ from the scrubbed body", psize, piece, arrived, len(got))
				}
			}
		}
	}
}

// BenchmarkScrubBody: a 100 MB answer through scrubBody, the upstream
// giving 256 KB a read (what readBufConn and more() gather), read with a
// buffer smaller than a record (through scrubBody's own buffer: a copy
// more) and with the reverse proxy's 256 KB (straight into it).
func BenchmarkScrubBody(b *testing.B) {
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}}}
	body := make([]byte, 100<<20)
	for _, psize := range []int{maxRecord - 1, wireBuf} {
		b.Run(map[int]string{maxRecord - 1: "own-buffer", wireBuf: "into-caller"}[psize], func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			p := make([]byte, psize)
			for i := 0; i < b.N; i++ {
				resp := &http.Response{Header: http.Header{}, Body: &pieces{s: body, k: wireBuf}}
				s.scrubResponse(resp)
				resp.Body.(*scrubBody).more = func() bool { return true }
				for {
					if _, err := resp.Body.Read(p); err != nil {
						break
					}
				}
			}
		})
	}
}
