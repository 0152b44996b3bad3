package perf

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress prints a progress line (rewritten in place) while a test runs,
// when the output is a terminal.
type progress struct {
	w     io.Writer
	on    bool
	every time.Duration // refresh interval (default 250 ms)
}

// track shows label, the elapsed time of a test of about total, and the
// rate from count (operations so far, bytes per operation; 0 bytes shows
// operations per second). count is called from another goroutine. The
// returned function clears the line.
func (p *progress) track(label string, start time.Time, total time.Duration, count func() (uint64, int)) func() {
	if p == nil || !p.on {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		every := p.every
		if every <= 0 {
			every = 250 * time.Millisecond
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 78))
				return
			case <-t.C:
			}
			el := time.Since(start)
			n, size := count()
			rate := fmt.Sprintf("%.0f ops/s", float64(n)/el.Seconds())
			if size > 0 {
				rate = fmt.Sprintf("%.1f MB/s", float64(n)*float64(size)/el.Seconds()/1e6)
			}
			fmt.Fprintf(p.w, "\r  %-28s %6.1fs / %.1fs  %-18s", label, el.Seconds(), total.Seconds(), rate)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
