package intercept

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// scrubPair is one form of a real value an answer may echo, and what
// replaces it there: the same form of its mask, cut or padded to the same
// length, so an answer's length holds.
type scrubPair struct{ real, mask []byte }

// minForm is the shortest encoded form searched: a shorter one (a base64
// core of a tiny value) would match ordinary text.
const minForm = 8

// formsOf are the forms of a real value the scrub replaces, each paired
// with the same form of mask (the placeholder, fitted to the value's
// length). An allowed host that reflects a request may reflect it
// encoded: the value itself (any ASCII case: the scrub folds case, so an
// upper- or lower-cased echo is matched too), reversed, its base64
// (standard and URL alphabets) at each of the three alignments it can
// have in a longer text (the characters whose 6 bits lie within it), hex
// (either case), percent-encoded (every byte as %XX, or as
// url.QueryEscape and url.PathEscape leave it), and JSON- or Go-escaped
// (with and without the HTML escapes, with "\/"). Duplicates (a form equal
// to another up to case) are dropped (TestRT18TransformedEchoScrubbed).
func formsOf(real, mask string) []scrubPair {
	type enc func(string) []string
	one := func(f func(string) string) enc { return func(v string) []string { return []string{f(v)} } }
	encs := []enc{
		one(func(v string) string { return v }),
		one(reverseString),
		func(v string) []string {
			var out []string
			for _, e := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				for align := 0; align < 3; align++ {
					out = append(out, string(base64Core(e, v, align)))
				}
			}
			return out
		},
		one(func(v string) string { return hex.EncodeToString([]byte(v)) }),
		one(func(v string) string {
			var b strings.Builder
			for i := 0; i < len(v); i++ {
				fmt.Fprintf(&b, "%%%02X", v[i])
			}
			return b.String()
		}),
		one(url.QueryEscape),
		one(url.PathEscape),
		func(v string) []string {
			q := strconv.Quote(v)
			j, _ := json.Marshal(v)
			var plain bytes.Buffer
			e := json.NewEncoder(&plain)
			e.SetEscapeHTML(false)
			_ = e.Encode(v)
			p := strings.TrimSpace(plain.String())
			out := []string{q, string(j), p}
			for _, s := range []string{string(j), p} {
				out = append(out, strings.ReplaceAll(s, "/", `\/`))
			}
			for i, s := range out {
				out[i] = s[1 : len(s)-1] // the quotes are not the value's
			}
			return out
		},
	}
	var out []scrubPair
	for i, e := range encs {
		rs, ms := e(real), e(mask)
		for j, r := range rs {
			if len(r) < minForm && i > 0 {
				continue
			}
			if r == "" || seenFold(out, r) {
				continue
			}
			out = append(out, scrubPair{[]byte(r), []byte(fit(ms[j], len(r)))})
		}
	}
	return out
}

func seenFold(ps []scrubPair, r string) bool {
	for _, p := range ps {
		if equalFold(p.real, []byte(r)) {
			return true
		}
	}
	return false
}

// fit cuts or pads m (with "x") to n bytes.
func fit(m string, n int) string {
	if len(m) >= n {
		return m[:n]
	}
	return m + strings.Repeat("x", n-len(m))
}

func reverseString(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// base64Core is the part of v's base64 that depends on v alone when v
// starts align bytes into a 3-byte group: the characters whose 6 bits all
// lie within v.
func base64Core(enc *base64.Encoding, v string, align int) []byte {
	e := enc.EncodeToString(append(make([]byte, align), v...))
	start, end := (8*align+5)/6, 8*(align+len(v))/6
	if end > len(e) || start >= end {
		return nil
	}
	return []byte(e[start:end])
}

// scrubber finds every form of every real value in a text, ASCII case
// folded, in one pass whatever their number. The text is sampled: one
// block of w bytes (w: 8, or the shortest form's length if shorter) every
// st bytes (st: the shortest form's length less w-1, at most 32), so that
// any occurrence of a form holds a whole sampled block that begins within
// its first st bytes. Each sampled block is looked up in a hash table of
// the w-byte pieces at offsets 0..st-1 of each form (a bitmap of their
// hashes first, which fits the first-level cache; then a table with open
// addressing, a quarter full, exact), and only a hit is compared in full. bytes.Index once per
// form and chunk (what the scrub did when it knew one form per value) was
// a pass over the answer per form (BenchmarkScrub).
type scrubber struct {
	pairs  []scrubPair
	w, st  int
	maxLen int                   // the longest form
	mask   uint64                // a block's w bytes
	shift  uint                  // hash's: 64 less log2(len(tab))
	bits   *[1 << 16 / 64]uint64 // a bit per piece's top 16 hash bits
	tab    []slot
	cands  []cand
}

// slot is a piece (key 0: empty; a folded key never is 0) and its forms,
// cands[first:first+n].
type slot struct {
	key      uint64
	first, n int32
}

// cand is a form whose piece at offset off is a block's key.
type cand struct{ pair, off int }

func newScrubber(pairs []scrubPair) *scrubber {
	s := &scrubber{pairs: pairs, w: 8, st: 32}
	minLen := 0
	for i, p := range pairs {
		if i == 0 || len(p.real) < minLen {
			minLen = len(p.real)
		}
		s.maxLen = max(s.maxLen, len(p.real))
	}
	s.w = max(1, min(s.w, minLen))
	s.st = max(1, min(s.st, minLen-s.w+1))
	s.mask = ^uint64(0)
	if s.w < 8 {
		s.mask = 1<<(8*s.w) - 1
	}
	byKey := map[uint64][]cand{}
	var keys []uint64
	for i, p := range pairs {
		for off := 0; off < s.st && off+s.w <= len(p.real); off++ {
			key := s.key(p.real[off:])
			if byKey[key] == nil {
				keys = append(keys, key)
			}
			byKey[key] = append(byKey[key], cand{i, off})
		}
	}
	logSize := uint(4)
	for 1<<logSize < 4*len(keys) {
		logSize++
	}
	s.shift = 64 - logSize
	s.tab = make([]slot, 1<<logSize)
	s.bits = new([1 << 16 / 64]uint64)
	for _, key := range keys {
		h16 := (key * hashMul) >> 48
		s.bits[h16>>6] |= 1 << (h16 & 63)
		h := s.hash(key)
		for s.tab[h].key != 0 {
			h = (h + 1) & uint64(len(s.tab)-1)
		}
		s.tab[h] = slot{key, int32(len(s.cands)), int32(len(byKey[key]))}
		s.cands = append(s.cands, byKey[key]...)
	}
	return s
}

// key is the block at the start of b (at least w bytes), case folded
// (every byte ORed with 0x20: letters of either case meet, and two texts
// equal up to ASCII case always have the same key).
func (s *scrubber) key(b []byte) uint64 {
	var v uint64
	if len(b) >= 8 {
		v = binary.LittleEndian.Uint64(b)
	} else {
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
	}
	return (v | fold8) & s.mask
}

const fold8 = 0x2020202020202020

const hashMul = 0x9E3779B97F4A7C15

func (s *scrubber) hash(v uint64) uint64 { return (v * hashMul) >> s.shift }

// scrub replaces, in place, every form (up to ASCII case) wholly inside b
// by its mask.
func (s *scrubber) scrub(b []byte) {
	if s == nil || len(s.pairs) == 0 {
		return
	}
	w, st, m, bits := s.w, s.st, s.mask, s.bits
	pos := 0
	// The loop every byte of every answer goes through: a load, a
	// multiply and a bit test per sampled block.
	for ; pos+8 <= len(b); pos += st {
		v := (binary.LittleEndian.Uint64(b[pos:]) | fold8) & m
		if h := (v * hashMul) >> 48; bits[h>>6]&(1<<(h&63)) != 0 {
			s.probe(b, pos, v)
		}
	}
	for ; pos+w <= len(b); pos += st {
		s.probe(b, pos, s.key(b[pos:]))
	}
}

// probe looks the block at pos (key v) up, and compares in full the forms
// it is a piece of.
func (s *scrubber) probe(b []byte, pos int, v uint64) {
	tmask := uint64(len(s.tab) - 1)
	for h := s.hash(v); ; h = (h + 1) & tmask {
		e := &s.tab[h]
		if e.key == 0 {
			return
		}
		if e.key != v {
			continue
		}
		for _, c := range s.cands[e.first : e.first+e.n] {
			p := s.pairs[c.pair]
			start := pos - c.off
			if start >= 0 && start+len(p.real) <= len(b) && equalFold(b[start:start+len(p.real)], p.real) {
				copy(b[start:], p.mask)
			}
		}
		return
	}
}

// prefixTail is the length of the longest suffix of b that is (up to
// case) a proper prefix of a form, and that form: a value that begins in
// b and ends past it begins there, so the bytes before it can go out.
func (s *scrubber) prefixTail(b []byte) (int, int) {
	hold, which := 0, -1
	if s == nil {
		return 0, -1
	}
	for pi, pr := range s.pairs {
		r := pr.real
		for i := max(0, len(b)-len(r)+1); i < len(b) && len(b)-i > hold; i++ {
			if lowerASCII(b[i]) == lowerASCII(r[0]) && equalFold(b[i:], r[:len(b)-i]) {
				hold, which = len(b)-i, pi
				break
			}
		}
	}
	return hold, which
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold is ASCII case-insensitive equality (bytes.EqualFold also folds
// Unicode, where a rune's bytes may change length).
func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// scrubString is scrub for a header's name or value, or an error's text.
func (s *scrubber) scrubString(v string) string {
	if s == nil || len(s.pairs) == 0 || len(v) < s.w {
		return v
	}
	b := []byte(v)
	s.scrub(b)
	return string(b)
}
