package review

import (
	"strings"
	"testing"
)

func TestOriginMeaningCoversEveryWord(t *testing.T) {
	for _, o := range []string{"", "unknown", "unverified", "verified:ci", "trusted:ci"} {
		if m := OriginMeaning(o); m == "" || m == "unknown origin word" {
			t.Errorf("%q: %q", o, m)
		}
	}
	if !strings.Contains(OriginMeaning("verified:ci"), "ci") {
		t.Error("meaning does not name the profile")
	}
}
