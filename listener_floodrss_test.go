package iwarp_test

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"
)

var (
	floodServerAddr = flag.String("iwarp.floodserver", "",
		"HOST:PORT of a server in another process (iwarp serve) that TestListenerFloodServerRSS floods")
	floodServerPID = flag.Int("iwarp.floodpid", 0,
		"process ID of -iwarp.floodserver, whose resident size TestListenerFloodServerRSS samples")
)

// TestListenerFloodServerRSS floods a server in another process, as
// TestListenerFlood floods its Listener: 256 silent connections reopened
// as the server closes them (during which 5 clean clients must connect
// within 1 s each), 1,000 late RTRs, 2,000 Requests without RTR; then it
// closes everything and requires the server's resident size, 30 s later,
// within twice what it was before the flood. It runs only when given a
// server (docs/security.md, "Memory after a flood"):
//
//	iwarp serve -p 7174 & go test -run TestListenerFloodServerRSS -v . -iwarp.floodserver 127.0.0.1:7174 -iwarp.floodpid $!
func TestListenerFloodServerRSS(t *testing.T) {
	if *floodServerAddr == "" || *floodServerPID <= 0 {
		t.Skip("a measurement of a server in another process: give -iwarp.floodserver and -iwarp.floodpid")
	}
	addr, pid := *floodServerAddr, strconv.Itoa(*floodServerPID)
	mib := func() float64 { return float64(residentBytes(pid)) / (1 << 20) }
	base := mib()
	if base == 0 {
		t.Fatalf("no resident size for process %s", pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peak := base
	step := func(what string) {
		peak = max(peak, mib())
		t.Logf("%s: %.1f MiB resident", what, mib())
	}
	step("baseline")
	f := startSilentFlood(t, addr, 256)
	checkCleanClients(t, ctx, addr, 5)
	f.stop()
	step("after 256 silent connections reopened")
	closeLate := lateRTRs(t, ctx, addr, 1000, func() {})
	step("after 1,000 late RTRs")
	conns := requestsWithoutRTR(t, addr, 2000)
	if d, err := cleanConnect(t, ctx, addr); err != nil { // served once the server took all 2,000
		t.Errorf("clean client after 2,000 Requests: %v after %v", err, d)
	}
	step("after 2,000 Requests without RTR")
	closeLate()
	closeConns(conns)
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		time.Sleep(5 * time.Second) // a sampling period, not a synchronisation
		step("+" + time.Since(start).Round(time.Second).String())
	}
	if now := mib(); now > 2*base {
		t.Errorf("resident %.1f MiB 30 s after the flood (peak %.1f MiB), baseline %.1f MiB: more than twice", now, peak, base)
	}
}
