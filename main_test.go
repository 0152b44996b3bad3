package iwarp_test

import (
	"os"
	"testing"

	"github.com/goiwarp/iwarp/internal/leakcheck"
)

func TestMain(m *testing.M) {
	os.Exit(leakcheck.Check(m.Run(), "iwarp/internal/verbs.(*QP)", "iwarp.(*Listener)"))
}
