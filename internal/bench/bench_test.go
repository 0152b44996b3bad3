package bench

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	l := Summarize(s)
	want := Latency{Min: 1, Median: 50, Avg: 50.5, P99: 99, P999: 100, Max: 100}
	if l.Min != want.Min || l.Median != want.Median || l.Avg != want.Avg || l.P99 != want.P99 || l.P999 != want.P999 || l.Max != want.Max {
		t.Errorf("got %+v, want %+v", *l, want)
	}
	if l.Stdev < 28.8 || l.Stdev > 28.9 {
		t.Errorf("stdev %v, want 28.87", l.Stdev)
	}
	if z := Summarize(nil); *z != (Latency{}) {
		t.Errorf("no samples: %+v", *z)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestLoadNote(t *testing.T) {
	l, n := LoadAverage(), LoadNote()
	if (l == "") != (n == "") || (l != "" && n != ", load average "+l) || (l != "" && len(strings.Fields(l)) != 3) {
		t.Errorf("LoadAverage %q, LoadNote %q", l, n)
	}
}

// TestChild starts a shell as the child: its first line is the address,
// the rest is copied, and closing its input stops it.
func TestChild(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this system")
	}
	var rest strings.Builder
	c, err := StartChild(exec.Command(sh, "-c", "echo ' 127.0.0.1:5 '; cat >/dev/null; echo bye"), &rest)
	if err != nil {
		t.Fatal(err)
	}
	if c.Line != "127.0.0.1:5" {
		t.Errorf("line %q", c.Line)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if rest.String() != "bye\n" {
		t.Errorf("rest %q", rest.String())
	}
	if _, err := StartChild(exec.Command(sh, "-c", "exit 3"), nil); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Errorf("a child that exits at once: %v", err)
	}
}

func TestUntilEOF(t *testing.T) {
	r, w := io.Pipe()
	ctx, cancel := UntilEOF(context.Background(), r)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatal("ended before its input did")
	}
	w.Close()
	<-ctx.Done()
}
