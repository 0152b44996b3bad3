package perf

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// runTCPPipelined measures raw TCP request-response at a depth: size-byte
// requests that the server echoes (tcpPingPong), depth of them
// outstanding; each time answers arrive the client writes as many new
// requests in one write. The rate counts answers.
func (ep *Endpoint) runTCPPipelined(ctx context.Context, size, depth int, cfg *Config, prog *progress) (Result, error) {
	res := Result{Op: "pipelined", Mode: "bw", Transport: "tcp", Size: size, QPs: 1, Depth: depth}
	c, err := ep.dialTCP(ctx, tcpPingPong, size)
	if err != nil {
		return res, err
	}
	defer c.Close()
	requests, answers := make([]byte, depth*size), make([]byte, depth*size)
	var sent, got uint64
	var done atomic.Uint64
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	stopProg := prog.track(fmt.Sprintf("tcp pipelined %d B, %d deep", size, depth), start, cfg.Duration, func() (uint64, int) { return done.Load(), 0 })
	defer stopProg()
	send := func(n int) error {
		if cfg.Iters > 0 {
			n = min(n, int(uint64(cfg.Iters)-sent))
		} else if !time.Now().Before(deadline) {
			n = 0
		}
		if n <= 0 {
			return nil
		}
		_, err := c.Write(requests[:n*size])
		sent += uint64(n)
		return err
	}
	if err := send(depth); err != nil {
		return res, err
	}
	partial := 0
	for got < sent {
		k, err := c.Read(answers)
		if err != nil {
			return res, err
		}
		partial += k
		n := partial / size
		partial %= size
		got += uint64(n)
		done.Store(got)
		if err := send(n); err != nil {
			return res, err
		}
	}
	res.Ops = got
	res.setRates(time.Since(start))
	_ = c.CloseWrite()
	return res, nil
}
