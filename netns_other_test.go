//go:build !linux || !(amd64 || arm64)

package iwarp_test

import (
	"runtime"
	"testing"
)

// TestRealNetworkEveryOperationVerifiedUnderLossAndReordering needs Linux
// network namespaces (netns_linux_test.go).
func TestRealNetworkEveryOperationVerifiedUnderLossAndReordering(t *testing.T) {
	t.Skipf("network namespaces are Linux-only, and setns is wired up here for amd64 and arm64 (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
}
