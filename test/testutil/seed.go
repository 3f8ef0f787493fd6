package testutil

import (
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"
)

// SeedEnv names the variable that replays a randomised test: every test
// that draws from Seed logs "seed N (FEDMEM_TEST_SEED=N replays it)".
const SeedEnv = "FEDMEM_TEST_SEED"

// Seed returns a random source for a randomised test and logs its seed,
// taken from $FEDMEM_TEST_SEED when set (to replay a failure) or else from
// the clock. One helper, so every randomised test can be replayed the same way.
func Seed(t testing.TB) *rand.Rand {
	t.Helper()
	seed := time.Now().UnixNano()
	if v := os.Getenv(SeedEnv); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not an integer seed", SeedEnv, v)
		}
		seed = s
	}
	t.Logf("seed %d (%s=%d replays it)", seed, SeedEnv, seed)
	return rand.New(rand.NewSource(seed))
}
