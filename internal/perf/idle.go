package perf

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The idle-QP memory target (idle): cfg.IdleQPs connected QPs with the
// default QPConfig in the client process, their peers in the server
// process, and the resident memory each process grew by, per QP, after
// garbage collection.
//
// Each process holds a TCP connection per QP: 10,000 QPs need 10,000 file
// descriptors in each of the two. Both raise their limit of open files to
// the hard limit; the client connects a first batch of QPs, sees how many
// descriptors a QP takes in each process, and when the rest would not fit
// the target FAILs saying so, instead of measuring fewer QPs.

// Idle target settings.
const (
	idleGoalKiB = 32 // per QP, in either process
	idleProbe   = 64 // QPs connected before checking that the rest fit
	fdSpare     = 64 // descriptors left for everything else (stat connections, listeners)
)

// idleConns holds the server's idle QPs. No goroutine waits for each (it
// would count as the QP's memory): a stat closes those whose connection
// has ended, a stat with flagRelease all of them, and so does Serve's end.
type idleConns struct {
	mu    sync.Mutex
	down  bool // Serve is ending
	conns []*serverConn
}

// add holds s, or reports false once Serve is ending.
func (ic *idleConns) add(s *serverConn) bool {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.down {
		return false
	}
	ic.conns = append(ic.conns, s)
	return true
}

// sweep closes the QPs whose connection has ended and returns how many
// are held.
func (ic *idleConns) sweep() int {
	ic.mu.Lock()
	var gone []*serverConn
	kept := ic.conns[:0]
	for _, s := range ic.conns {
		select {
		case <-s.qp.Done():
			gone = append(gone, s)
		default:
			kept = append(kept, s)
		}
	}
	clear(ic.conns[len(kept):])
	ic.conns = kept
	ic.mu.Unlock()
	for _, s := range gone {
		s.close()
	}
	return len(kept)
}

// closeAll closes every held QP; with down it also refuses new ones.
func (ic *idleConns) closeAll(down bool) {
	ic.mu.Lock()
	conns := ic.conns
	ic.conns = nil
	ic.down = ic.down || down
	ic.mu.Unlock()
	for _, s := range conns {
		s.close()
	}
}

// idleTarget connects cfg.IdleQPs idle QPs (their peers in the server
// process) and reports the resident memory growth per QP of both
// processes after garbage collection, the connection rate and the file
// descriptors per QP.
func (v *vsTCP) idleTarget(ctx context.Context) (Verdict, []Extra, error) {
	n := v.cfg.IdleQPs
	t := Verdict{Name: fmt.Sprintf("memory per idle QP (%d QPs)", n), Goal: fmt.Sprintf("<= %d KiB", idleGoalKiB), Unit: "KiB/QP"}
	began := time.Now()
	limit := raiseFDLimit()
	srvBefore, err := v.ep.query(ctx, 0)
	if err != nil {
		return t, nil, err
	}
	open0, counted := openFDs()
	before := takeSnapshot(true)
	conns := make([]*conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.close()
		}
		_, _ = v.ep.query(ctx, flagRelease) // the server closes its side
	}()
	var setup time.Duration
	// dial connects QPs until there are upTo; a process out of file
	// descriptors is the target's FAIL, with what limits it.
	dial := func(upTo int) (note string, err error) {
		start := time.Now()
		defer func() { setup += time.Since(start) }()
		for len(conns) < upTo {
			c, err := v.ep.dial(ctx, desc{op: opIdle, batch: 1, flags: flagCRC}, 0, 64, 64)
			if err != nil {
				return v.idleDialFailed(ctx, len(conns), n, limit, err)
			}
			conns = append(conns, c)
		}
		return "", nil
	}
	fail := func(note string) (Verdict, []Extra, error) {
		t.Verdict, t.Note = VerdictFail, note
		fmt.Fprintf(v.w, "  %-18s FAIL: %s\n", "idle", note)
		return t, nil, nil
	}
	if note, err := dial(min(n, idleProbe)); note != "" || err != nil {
		if err != nil {
			return t, nil, err
		}
		return fail(note)
	}
	srvProbe, err := v.ep.query(ctx, 0)
	if err != nil {
		return t, nil, err
	}
	open1, _ := openFDs()
	if !counted {
		open0, open1 = 0, len(conns)
	}
	k := len(conns)
	if note := fdShortfall("client", n, k, uint64(open0), uint64(open1), limit); note != "" {
		return fail(note)
	}
	if note := fdShortfall("server", n, k, srvBefore.fds.open, srvProbe.fds.open, srvProbe.fds.limit); note != "" {
		return fail(note)
	}
	if note, err := dial(n); note != "" || err != nil {
		if err != nil {
			return t, nil, err
		}
		return fail(note)
	}
	// The server holds a QP once its Accept returned, which can be after
	// the client's Connect did.
	var srvAfter reply
	for wait := time.Millisecond; ; wait *= 2 {
		if srvAfter, err = v.ep.query(ctx, 0); err != nil {
			return t, nil, err
		}
		if srvAfter.idle >= uint64(n) {
			break
		}
		if wait > time.Second {
			return t, nil, fmt.Errorf("the server holds %d of the %d idle QPs", srvAfter.idle, n)
		}
		time.Sleep(wait)
	}
	after := takeSnapshot(true)
	open2, _ := openFDs()
	perQP := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) }
	client, server := perQP(before.rss, after.rss)/1024, perQP(srvBefore.sys.rss, srvAfter.sys.rss)/1024
	t.Value = max(client, server)
	t.Values = []float64{t.Value}
	t.Ours = fmt.Sprintf("client %.1f KiB", client)
	t.Raw = fmt.Sprintf("server %.1f KiB", server)
	t.Verdict = VerdictPass
	if t.Value > idleGoalKiB {
		t.Verdict = VerdictFail
	}
	rate := float64(n) / setup.Seconds()
	extra := []Extra{
		{"connections set up per second", fmt.Sprintf("%.0f/s (%d sequential Connect+Accept, MPA, CRC asked, P2P)", rate, n)},
		{"RSS per idle QP", fmt.Sprintf("client %.1f KiB, server %.1f KiB (after GC, goroutine stacks included)", client, server)},
	}
	if counted {
		extra = append(extra, Extra{"file descriptors per idle QP", fmt.Sprintf("client %.2f, server %.2f (RLIMIT_NOFILE client %d, server %d)",
			perQP(uint64(open0), uint64(open2)), perQP(srvBefore.fds.open, srvAfter.fds.open), limit, srvAfter.fds.limit)})
	}
	fmt.Fprintf(v.w, "  %-18s %d QPs: client %.1f KiB/QP, server %.1f KiB/QP, %.0f connections/s, %.1f s\n", "idle", n, client, server, rate, time.Since(began).Seconds())
	return t, extra, nil
}

// fdShortfall says why n idle QPs would not fit in a process's limit of
// open files, from its descriptors open before (open0) and after (open1)
// the first k QPs, or returns "" when they fit or the limit is unknown.
func fdShortfall(who string, n, k int, open0, open1, limit uint64) string {
	if limit == 0 || k == 0 {
		return ""
	}
	perQP := max(1, (float64(open1)-float64(open0))/float64(k))
	need := float64(open1) + perQP*float64(n-k) + fdSpare
	if need <= float64(limit) {
		return ""
	}
	return fmt.Sprintf("%d idle QPs do not fit in the %s process: a QP takes %.1f file descriptors there, %d QPs would need %.0f with %d spare, and it may open %d (RLIMIT_NOFILE, already raised to the hard limit: raise that, ulimit -Hn, or lower -idleqps)",
		n, who, perQP, n, need, fdSpare, limit)
}

// idleDialFailed explains a connection that failed after k of n idle QPs:
// a process out of file descriptors is the target's FAIL (the note),
// anything else an error.
func (v *vsTCP) idleDialFailed(ctx context.Context, k, n int, limit uint64, err error) (string, error) {
	if outOfFDs(err) {
		return fmt.Sprintf("the client process ran out of file descriptors after %d of %d QPs (RLIMIT_NOFILE %d, already raised to the hard limit): %v", k, n, limit, err), nil
	}
	if r, qerr := v.ep.query(ctx, 0); qerr == nil && r.fds.limit > 0 && r.fds.open+fdSpare >= r.fds.limit {
		return fmt.Sprintf("the server process ran out of file descriptors after %d of %d QPs (%d open, RLIMIT_NOFILE %d): %v", k, n, r.fds.open, r.fds.limit, err), nil
	}
	return "", fmt.Errorf("after %d QPs: %w", k, err)
}
