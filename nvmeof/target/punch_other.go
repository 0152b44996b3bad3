//go:build !linux

package target

import (
	"errors"
	"os"
)

// punchHole is not available: the caller writes zeros.
func punchHole(*os.File, int64, int64) error {
	return errors.New("nvmeof: hole punching not supported on this system")
}
