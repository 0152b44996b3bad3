package leakcheck

import (
	"testing"
	"time"
)

func parkHere(started, stop chan struct{}) {
	close(started)
	<-stop
}

func TestLeakedFindsAndForgets(t *testing.T) {
	started, stop := make(chan struct{}), make(chan struct{})
	go parkHere(started, stop)
	<-started
	if bad := Leaked(50*time.Millisecond, "leakcheck.parkHere"); len(bad) != 1 {
		t.Fatalf("found %d leaked goroutines, want 1", len(bad))
	}
	close(stop)
	if bad := Leaked(time.Second, "leakcheck.parkHere"); len(bad) != 0 {
		t.Fatalf("still reported after exit: %v", bad)
	}
}
