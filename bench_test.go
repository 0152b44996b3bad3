package iwarp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/goiwarp/iwarp"
)

// Benchmarks of every data path through the public API over loopback (both
// ends in this process), with a raw TCP baseline in the same run. Names use
// key=value parts for benchstat: go test -run '^$' -bench . -count 5.
// "iwarp perf" measures the same paths between two processes
// (docs/performance.md).

var benchSizes = []int{64, 4096, 65536, 1 << 20}

// benchBySize runs one sub-benchmark per size: setup connects a pair,
// registers what the operation needs and returns one operation.
func benchBySize(b *testing.B, setup func(ctx context.Context, a, t *endpoint, n int) func() error) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			a, t := connectPair(b, nil, nil)
			op := setup(context.Background(), a, t, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	benchBySize(b, func(ctx context.Context, a, t *endpoint, n int) func() error {
		dst, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessRemoteWrite)
		src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
		remote, sge := dst.Remote(), src.SGE(0, n)
		return func() error { return a.qp.Write(ctx, remote, sge) }
	})
}

func BenchmarkRead(b *testing.B) {
	benchBySize(b, func(ctx context.Context, a, t *endpoint, n int) func() error {
		src, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessRemoteRead)
		dst, _ := a.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
		remote, sge := src.Remote(), dst.SGE(0, n)
		return func() error { return a.qp.Read(ctx, remote, sge) }
	})
}

func BenchmarkSendRecv(b *testing.B) {
	benchBySize(b, func(ctx context.Context, a, t *endpoint, n int) func() error {
		rb, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
		src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
		rsgl, ssge := []iwarp.SGE{rb.SGE(0, n)}, src.SGE(0, n)
		return func() error {
			if err := t.qp.PostRecv(iwarp.RecvWR{SGL: rsgl}); err != nil {
				return err
			}
			if err := a.qp.Send(ctx, ssge); err != nil {
				return err
			}
			_, err := t.cq.Next(ctx)
			return err
		}
	})
}

// BenchmarkFetchAdd is a round trip: post, the peer's responder runs the
// atomic, the response completes the WR.
func BenchmarkFetchAdd(b *testing.B) {
	a, t := connectPair(b, nil, nil)
	ctx := context.Background()
	w, _ := t.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
	remote := w.Remote()
	b.SetBytes(8)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.qp.FetchAdd(ctx, remote, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteWithImmediatePingPong: 8 bytes there and back, each side
// waiting for the other's immediate completion.
func BenchmarkWriteWithImmediatePingPong(b *testing.B) {
	a, t := connectPair(b, nil, nil)
	ctx := context.Background()
	am, _ := a.pd.RegisterMemory(make([]byte, 8), iwarp.AccessRemoteWrite|iwarp.AccessLocalWrite)
	tm, _ := t.pd.RegisterMemory(make([]byte, 8), iwarp.AccessRemoteWrite|iwarp.AccessLocalWrite)
	done := make(chan error, 1)
	if err := t.qp.PostRecv(iwarp.RecvWR{}); err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := t.cq.Next(ctx)
			if err != nil || c.Status != iwarp.StatusSuccess {
				done <- err
				return
			}
			if c.Op != iwarp.OpRecv {
				continue
			}
			if c.Immediate == 0 {
				done <- nil
				return
			}
			// The next receive is posted before the reply, which is what
			// the initiator's next message answers.
			if err := t.qp.PostRecv(iwarp.RecvWR{}); err != nil {
				done <- err
				return
			}
			if err := t.qp.WriteWithImmediate(ctx, am.Remote(), c.Immediate, tm.SGE(0, 8)); err != nil {
				done <- err
				return
			}
		}
	}()
	b.SetBytes(8)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		if err := a.qp.PostRecv(iwarp.RecvWR{}); err != nil {
			b.Fatal(err)
		}
		if err := a.qp.WriteWithImmediate(ctx, tm.Remote(), i, am.SGE(0, 8)); err != nil {
			b.Fatal(err)
		}
		for {
			c, err := a.cq.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if c.Op == iwarp.OpRecv {
				break
			}
		}
	}
	_ = a.qp.ImmediateData(ctx, 0, 0)
	<-done
}

func BenchmarkReadV2(b *testing.B) {
	benchBySize(b, func(ctx context.Context, a, t *endpoint, n int) func() error {
		src, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessRemoteRead)
		dst, _ := a.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
		remote, sge := src.Remote(), dst.SGE(0, n)
		return func() error { return a.qp.ReadV2(ctx, remote, sge) }
	})
}

func BenchmarkSendWithImmediate(b *testing.B) {
	benchBySize(b, func(ctx context.Context, a, t *endpoint, n int) func() error {
		rb, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
		src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
		rsgl, ssge := []iwarp.SGE{rb.SGE(0, n)}, src.SGE(0, n)
		return func() error {
			if err := t.qp.PostRecv(iwarp.RecvWR{SGL: rsgl}); err != nil {
				return err
			}
			if err := a.qp.SendWithImmediate(ctx, 7, ssge); err != nil {
				return err
			}
			_, err := t.cq.Next(ctx)
			return err
		}
	})
}

// BenchmarkWriteWithImmediate: a Write and its Immediate Data, the
// target's receive completion polled (a one-way stream, not a ping-pong).
func BenchmarkWriteWithImmediate(b *testing.B) {
	benchBySize(b, func(ctx context.Context, a, t *endpoint, n int) func() error {
		dst, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessRemoteWrite)
		src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
		remote, sge := dst.Remote(), src.SGE(0, n)
		return func() error {
			if err := t.qp.PostRecv(iwarp.RecvWR{}); err != nil {
				return err
			}
			if err := a.qp.WriteWithImmediate(ctx, remote, 9, sge); err != nil {
				return err
			}
			_, err := t.cq.Next(ctx)
			return err
		}
	})
}

// BenchmarkCompareSwap is a round trip, as FetchAdd.
func BenchmarkCompareSwap(b *testing.B) {
	a, t := connectPair(b, nil, nil)
	ctx := context.Background()
	w, _ := t.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
	remote := w.Remote()
	b.SetBytes(8)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		if _, err := a.qp.CompareSwap(ctx, remote, i, i+1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPostedSend is the message rate of small Sends through the
// posting API: batches of 16 WRs (the last signaled) with up to 48 in
// flight, the receiver re-posting its receives as it polls them.
func BenchmarkPostedSend(b *testing.B) {
	for _, n := range []int{64, 4096} {
		b.Run(fmt.Sprintf("size=%d/batch=16", n), func(b *testing.B) {
			a, t := connectPair(b, nil, nil)
			const batch, depth = 16, 48
			src, _ := a.pd.RegisterMemory(make([]byte, n), 0)
			rb, _ := t.pd.RegisterMemory(make([]byte, n), iwarp.AccessLocalWrite)
			rwr := iwarp.RecvWR{SGL: []iwarp.SGE{rb.SGE(0, n)}}
			for range 64 {
				if err := t.qp.PostRecv(rwr); err != nil {
					b.Fatal(err)
				}
			}
			wrs := make([]iwarp.SendWR, batch)
			for i := range wrs {
				wrs[i] = iwarp.SendWR{Op: iwarp.OpSend, SGL: []iwarp.SGE{src.SGE(0, n)}}
			}
			wrs[batch-1].Flags = iwarp.Signaled
			var out [64]iwarp.Completion
			// recvd counts receives polled and re-posted: a Send goes out
			// only when a receive is sure to be posted for it.
			sent, recvd, done := 0, 0, 0
			poll := func() {
				k := t.cq.Poll(out[:])
				for range k {
					if err := t.qp.PostRecv(rwr); err != nil {
						b.Fatal(err)
					}
				}
				recvd += k
				done += batch * a.cq.Poll(out[:])
				if k == 0 {
					runtime.Gosched()
				}
			}
			b.SetBytes(int64(n * batch)) // one op is one batch
			b.ReportAllocs()
			for b.Loop() {
				for sent-done+batch > depth || sent-recvd+batch > 64 {
					poll()
				}
				if err := a.qp.PostSend(wrs...); err != nil {
					b.Fatal(err)
				}
				sent += batch
			}
			for done < sent || recvd < sent {
				poll()
			}
			b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkTCPPingPong is the raw TCP round trip of n bytes, the baseline
// of the ping-pong and atomic round trips.
func BenchmarkTCPPingPong(b *testing.B) {
	for _, n := range []int{8, 4096} {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, n)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTCP is the raw TCP baseline in the same process layout: a
// stream of n-byte writes read by another goroutine.
func BenchmarkTCP(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
