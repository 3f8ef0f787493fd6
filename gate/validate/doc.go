// Package validate checks the bytes of a draft before the gate decides on
// it: text encoding, control and invisible characters, prompt-injection
// phrases, links, and secrets (gitleaks used as a library).
//
// It promises:
//   - every check works on bytes the caller holds; nothing here opens a file
//     or passes a draft-controlled path to another library (gitleaks gets a
//     fragment with no path, so its path allowlists cannot be steered);
//   - `gitleaks:allow` markers in a draft are ignored, and base64/hex/percent
//     encoded secrets are decoded and scanned;
//   - a finding never repeats the secret it found, so receipts and logs do
//     not leak it;
//   - Error findings reject a draft, Flag findings hold it for review.
package validate
