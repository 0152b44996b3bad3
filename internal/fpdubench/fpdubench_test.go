package fpdubench

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMeasure runs two cases against a receiver in this process: the
// medians are there (not what they are).
func TestMeasure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ln, func(err error) { t.Errorf("receiver: %v", err) }) }()
	defer func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	cases, err := SelectCases("88B+crc,1.4KiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		r, err := Measure(ln.Addr().String(), c, 2, time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if r.TCPMBps <= 0 || r.FPDUMBps <= 0 || r.Ratio <= 0 || r.FPDUsPerSec <= 0 {
			t.Errorf("%s: %+v", c.Name, r)
		}
	}
	if _, err := Measure(ln.Addr().String(), Cases[0], 0, time.Millisecond); err == nil {
		t.Error("0 pairs measured")
	}
}

func TestSelectCases(t *testing.T) {
	got, err := SelectCases("88B+crc,1.4KiB")
	if err != nil || len(got) != 2 || got[0].Name != "1.4KiB" || got[1].Name != "88B+crc" {
		t.Errorf("got %v, %v (want the order of Cases)", got, err)
	}
	if all, err := SelectCases(""); err != nil || len(all) != len(Cases) {
		t.Errorf("all: %v, %v", all, err)
	}
	for _, bad := range []string{"nosuch", "64KiB,", "64kib"} {
		_, err := SelectCases(bad)
		if err == nil || !strings.Contains(err.Error(), "have 64KiB, 1.4KiB, 88B, 64KiB+crc, 1.4KiB+crc, 88B+crc") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if !slices.Equal(CaseNames(), []string{"64KiB", "1.4KiB", "88B", "64KiB+crc", "1.4KiB+crc", "88B+crc"}) {
		t.Errorf("names %q", CaseNames())
	}
}

func TestVerdict(t *testing.T) {
	ratio, rate := Cases[0], Cases[2]
	if !ratio.Pass(Result{Ratio: 0.95}) || ratio.Pass(Result{Ratio: 0.5, FPDUsPerSec: 1e9}) || ratio.Goal() != ">=0.90x" {
		t.Errorf("ratio case %+v", ratio)
	}
	if !rate.Pass(Result{FPDUsPerSec: 4e6}) || rate.Pass(Result{Ratio: 9, FPDUsPerSec: 1e6}) || rate.Goal() != ">=3.0M/s" {
		t.Errorf("rate case %+v", rate)
	}
}

// TestTrialDesc: the trial descriptor round-trips and the FPDU layout has
// the requested size on the wire.
func TestTrialDesc(t *testing.T) {
	d := trialDesc{kind: trialFPDU, crc: true, size: 1460, count: 1 << 40}
	if got := decodeTrialDesc(d.encode()); got != d {
		t.Errorf("got %+v, want %+v", got, d)
	}
	for _, size := range []int{88, 1460, 65536} {
		u := ulpduForSize(size)
		if wire := 2 + u + 4; wire != size {
			t.Errorf("size %d: ULPDU %d gives %d octets", size, u, wire)
		}
	}
}
