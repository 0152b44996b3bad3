package iwarp

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// rateLog writes error and warning logs through a user-supplied
// slog.Logger, at most burst per interval, so that a hostile peer making
// connection after connection fail cannot flood the log; what it
// suppressed is reported with the next record that gets through. Nothing
// is logged on the data path: only connection setup and teardown.
type rateLog struct {
	l        *slog.Logger
	mu       sync.Mutex
	start    time.Time
	n        int
	dropped  int
	burst    int
	interval time.Duration
}

func newRateLog(l *slog.Logger) *rateLog {
	return &rateLog{l: l, burst: 10, interval: time.Second}
}

// log emits a record at level unless the rate limit is exhausted (Debug and
// Info records are not limited: they are off by default in slog handlers).
func (r *rateLog) log(level slog.Level, msg string, attrs ...slog.Attr) {
	if r == nil || r.l == nil || !r.l.Enabled(context.Background(), level) {
		return
	}
	if level >= slog.LevelWarn {
		r.mu.Lock()
		now := time.Now()
		if now.Sub(r.start) >= r.interval {
			r.start, r.n = now, 0
		}
		if r.n >= r.burst {
			r.dropped++
			r.mu.Unlock()
			return
		}
		r.n++
		if r.dropped > 0 {
			attrs = append(attrs, slog.Int("suppressed", r.dropped))
			r.dropped = 0
		}
		r.mu.Unlock()
	}
	r.l.LogAttrs(context.Background(), level, msg, attrs...)
}
