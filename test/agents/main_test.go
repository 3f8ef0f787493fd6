package agents

import (
	"os"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
