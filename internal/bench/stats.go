package bench

import (
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Latency summarizes round-trip times, in microseconds.
type Latency struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Avg    float64 `json:"avg"`
	Stdev  float64 `json:"stdev"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	Max    float64 `json:"max"`
}

// Summarize sorts samples and summarizes them (all zero without samples).
// A quantile is the smallest sample at or above that fraction of them.
func Summarize(samples []time.Duration) *Latency {
	if len(samples) == 0 {
		return &Latency{}
	}
	slices.Sort(samples)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	var sum, sq float64
	for _, s := range samples {
		v := us(s)
		sum += v
		sq += v * v
	}
	n := float64(len(samples))
	avg := sum / n
	q := func(p float64) float64 {
		i := int(math.Ceil(p*n)) - 1
		return us(samples[min(max(i, 0), len(samples)-1)])
	}
	return &Latency{
		Min: us(samples[0]), Median: q(0.5), Avg: avg,
		Stdev: math.Sqrt(max(0, sq/n-avg*avg)),
		P99:   q(0.99), P999: q(0.999), Max: us(samples[len(samples)-1]),
	}
}

// Median returns the median of v (v is reordered); 0 for no values.
func Median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	slices.Sort(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// LoadAverage returns the 1, 5 and 15 minute load averages ("0.52 0.31
// 0.20") where the system tells them (Linux), or "": numbers measured on
// a busy machine are worth less, so the harnesses print it.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// LoadNote is ", load average X Y Z" to append to a headline, or "".
func LoadNote() string {
	if l := LoadAverage(); l != "" {
		return ", load average " + l
	}
	return ""
}
