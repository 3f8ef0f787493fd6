package validate

import (
	"fmt"
	"sync"
	"testing"
)

// TestSecretsParallel: scans run at once on one detector (no lock around
// gitleaks) and each finds its own secret and only it (run with -race).
func TestSecretsParallel(t *testing.T) {
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				text := fmt.Sprintf("line one\nnote %d/%d\ntoken = ghp_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7\n", w, i)
				if i%2 == 1 {
					text = fmt.Sprintf("a plain line %d/%d\n", w, i)
				}
				f, err := Secrets([]byte(text))
				switch {
				case err != nil:
					errs <- err.Error()
				case i%2 == 0 && (len(f) != 1 || f[0].Line != 3):
					errs <- fmt.Sprintf("worker %d scan %d: %v, want one finding on line 3", w, i, f)
				case i%2 == 1 && len(f) != 0:
					errs <- fmt.Sprintf("worker %d scan %d: %v on a plain line", w, i, f)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSecretsDetectorRenewed: gitleaks keeps every finding in its
// detector; past detRenew the next scan makes a new one, and secrets are
// still found across the change.
func TestSecretsDetectorRenewed(t *testing.T) {
	secret := []byte("token = ghp_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7\n")
	if f, err := Secrets(secret); err != nil || len(f) != 1 {
		t.Fatalf("first scan: %v, %v", f, err)
	}
	detMu.Lock()
	first := det
	detFound = detRenew // as if that many had been kept
	detMu.Unlock()
	for i := 0; i < 2; i++ {
		if f, err := Secrets(secret); err != nil || len(f) != 1 {
			t.Fatalf("scan %d after the bound: %v, %v", i, f, err)
		}
	}
	detMu.Lock()
	renewed, found := det, detFound
	detMu.Unlock()
	if renewed == first {
		t.Fatalf("the detector was not renewed past %d findings", detRenew)
	}
	if found != 1 {
		t.Errorf("the new detector counts %d findings, want the 1 made since", found)
	}
}
