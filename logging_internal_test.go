package iwarp

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRateLimitedWarnings: a flood of warnings is cut to the burst, and the
// number suppressed is reported with the next record that gets through.
func TestRateLimitedWarnings(t *testing.T) {
	var buf bytes.Buffer
	r := newRateLog(slog.New(slog.NewTextHandler(&buf, nil)))
	r.interval = 50 * time.Millisecond
	for i := 0; i < 25; i++ {
		r.log(slog.LevelWarn, "peer misbehaved")
	}
	if n := strings.Count(buf.String(), "peer misbehaved"); n != 10 {
		t.Fatalf("%d warnings logged, want the burst of 10", n)
	}
	time.Sleep(60 * time.Millisecond)
	r.log(slog.LevelWarn, "again")
	if !strings.Contains(buf.String(), "suppressed=15") {
		t.Fatalf("suppressed count not reported:\n%s", buf.String())
	}
	r.log(slog.LevelDebug, "debug is off in this handler")
	if strings.Contains(buf.String(), "debug is off") {
		t.Fatal("a disabled level was logged")
	}
}
