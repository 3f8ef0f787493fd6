// Package validate checks the bytes of a draft before the gate decides on
// it, and the bytes the gate is about to commit: text encoding, control and
// invisible characters, look-alike words, instructions aimed at agents,
// links and raw HTML, and secrets (gitleaks used as a library).
//
// It promises:
//   - every check works on bytes the caller holds; nothing here opens a file
//     or passes a draft-controlled path to another library (gitleaks gets a
//     fragment with no path, so its path allowlists cannot be steered);
//   - what is checked is what a reader gets: YAML values after escape
//     processing, Markdown as goldmark parses it, HTML as
//     golang.org/x/net/html tokenizes it, character references and
//     backslash escapes resolved; Committed re-parses and re-scans the
//     rendered note, its target path and the commit message;
//   - `gitleaks:allow` markers in a draft are ignored, and base64/hex/percent
//     encoded secrets are decoded and scanned;
//   - a finding never repeats the secret it found, so receipts and logs do
//     not leak it;
//   - cost is linear in the draft: expressions are compiled once and run
//     only at trigger words, Markdown shapes that make parsing superlinear
//     are refused;
//   - Error findings reject a draft, Flag findings hold it for review.
package validate
