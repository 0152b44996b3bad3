package verbs

import (
	"context"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/rdma"
)

// Benchmarks of the shell against raw TCP in the same run: each reports
// the shell's figure, raw TCP's and their ratio (issue 17, "Performance
// must hold"). Two shells over loopback, each with its own Device.

// percentile returns the p-th percentile (0 < p <= 1) of sorted d.
func percentile(d []time.Duration, p float64) time.Duration {
	i := int(float64(len(d))*p+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

// reportLatency reports the median and p99 of ours and raw's, in µs, and
// the ratios.
func reportLatency(b *testing.B, ours, raw []time.Duration) {
	slices.Sort(ours)
	slices.Sort(raw)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(percentile(ours, 0.5)), "p50-µs")
	b.ReportMetric(us(percentile(ours, 0.99)), "p99-µs")
	b.ReportMetric(us(percentile(raw, 0.5)), "tcp-p50-µs")
	b.ReportMetric(us(percentile(raw, 0.99)), "tcp-p99-µs")
	b.ReportMetric(us(percentile(ours, 0.5))/us(percentile(raw, 0.5)), "p50-ratio")
	b.ReportMetric(us(percentile(ours, 0.99))/us(percentile(raw, 0.99)), "p99-ratio")
	b.ReportMetric(us(ours[len(ours)-1]), "max-µs")
}

// tcpPingPong measures n round trips of req octets answered with resp
// octets by a goroutine doing blocking reads and writes: the raw TCP
// ping-pong the latency targets compare with.
func tcpPingPong(b *testing.B, n, req, resp int) []time.Duration {
	c, s := testnet.TCPPair(b)
	go func() {
		in, out := make([]byte, req), make([]byte, resp)
		for {
			if _, err := io.ReadFull(s, in); err != nil {
				return
			}
			if _, err := s.Write(out); err != nil {
				return
			}
		}
	}()
	in, out := make([]byte, resp), make([]byte, req)
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := c.Write(out); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat
}

// BenchmarkRoundTrip: an 8-byte Read or FetchAdd issued right after the
// responder's application returned from a CQ wait (it waits again
// meanwhile), one at a time through the blocking call; against a raw TCP
// ping-pong of the same FPDU sizes (a Read Request is 50 octets on the
// wire with CRC, its Response 30; an Atomic Request 78, its Response 38).
func BenchmarkRoundTrip(b *testing.B) {
	for _, m := range benchModes {
		for _, op := range []rdma.Opcode{rdma.OpRead, rdma.OpFetchAdd} {
			b.Run(m.name+"/"+op.String(), func(b *testing.B) { roundTrip(b, op, m.noPoll) })
		}
	}
}

// benchModes are the modes the benchmarks compare: the Device's poller,
// and a receive goroutine per QP waiting in the runtime's network poller.
var benchModes = modes[:2]

// roundTrip is BenchmarkRoundTrip of op in one mode.
func roundTrip(b *testing.B, op rdma.Opcode, noPoll bool) {
	a, r := pair(b, modeOpts(noPoll, false), modeOpts(noPoll, false))
	target := r.register(b, make([]byte, 64), mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	sink := a.register(b, make([]byte, 8), mem.AccessLocalWrite)
	ctx := context.Background()
	woke := make(chan struct{})
	go func() { // the responder's application
		defer close(woke)
		var out [4]CQE
		for {
			if err := r.cq.Wait(ctx); err != nil {
				return
			}
			if r.cq.Poll(out[:]) == 0 {
				continue
			}
			r.qp.PostRecv([]rdmap.RecvWR{{ID: 1}})
			woke <- struct{}{}
		}
	}()
	r.postRecv(b, rdmap.RecvWR{ID: 1})
	wr := remote(rdmap.SendWR{Op: op, SGL: []rdma.SGE{whole(sink)}, Add: 1}, target, 0)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		if _, err := a.qp.Do(ctx, rdmap.SendWR{Op: rdma.OpSend}); err != nil {
			b.Fatal(err)
		}
		<-woke // the responder returned from its wait, and waits again
		start := time.Now()
		if c, err := a.qp.Do(ctx, wr); err != nil || c.Status != rdma.StatusSuccess {
			b.Fatalf("%v: %+v, %v", op, c, err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	req, resp := 50, 30
	if op == rdma.OpFetchAdd {
		req, resp = 78, 38
	}
	reportLatency(b, lat, tcpPingPong(b, max(b.N, 1000), req, resp))
	r.cq.Close()
	for range woke {
	}
}

// rate16 runs n request-response operations on a with 16 in flight and
// returns how long they took.
func rate16(b testing.TB, a *end, wr rdmap.SendWR, n int) time.Duration {
	const depth = 16
	wr.Flags |= rdma.Signaled
	ctx := context.Background()
	var out [depth]CQE
	wrs := make([]rdmap.SendWR, depth)
	for i := range wrs {
		wrs[i] = wr
	}
	start := time.Now()
	posted, done := 0, 0
	for done < n {
		if k := min(depth-(posted-done), n-posted); k > 0 {
			a.post(b, wrs[:k]...)
			posted += k
		}
		got := a.cq.Poll(out[:])
		if got == 0 {
			if err := a.cq.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			continue
		}
		for i := range got {
			if out[i].Status != rdma.StatusSuccess {
				b.Fatalf("completion %+v", out[i].Completion)
			}
		}
		done += got
	}
	return time.Since(start)
}

// tcpRate16 is rate16 over raw TCP: requests of req octets, 16 in flight,
// answered with resp octets by a goroutine that answers each read's
// requests with one write (pipelining, as Redis clients do).
func tcpRate16(b *testing.B, n, req, resp int) time.Duration {
	const depth = 16
	c, s := testnet.TCPPair(b)
	go func() {
		in := make([]byte, 64<<10)
		out := make([]byte, 64<<10)
		pending := 0
		for {
			k, err := s.Read(in)
			if err != nil {
				return
			}
			pending += k
			m := pending / req
			pending -= m * req
			if m > 0 {
				if _, err := s.Write(out[:m*resp]); err != nil {
					return
				}
			}
		}
	}()
	reqs := make([]byte, depth*req)
	in := make([]byte, depth*resp)
	start := time.Now()
	sent, got, partial := 0, 0, 0
	for got < n {
		if k := min(depth-(sent-got), n-sent); k > 0 {
			if _, err := c.Write(reqs[:k*req]); err != nil {
				b.Fatal(err)
			}
			sent += k
		}
		k, err := c.Read(in)
		if err != nil {
			b.Fatal(err)
		}
		partial += k
		got += partial / resp
		partial %= resp
	}
	return time.Since(start)
}

// BenchmarkRate16: request-response operations (8-byte Reads, FetchAdds)
// on one QP with 16 in flight, against raw TCP pipelining 16 requests of
// the same sizes.
func BenchmarkRate16(b *testing.B) {
	for _, m := range benchModes {
		for _, op := range []rdma.Opcode{rdma.OpRead, rdma.OpFetchAdd} {
			b.Run(m.name+"/"+op.String(), func(b *testing.B) { rate16Bench(b, op, m.noPoll) })
		}
	}
}

// rate16Bench is BenchmarkRate16 of op in one mode.
func rate16Bench(b *testing.B, op rdma.Opcode, noPoll bool) {
	a, r := pair(b, modeOpts(noPoll, false), modeOpts(noPoll, false))
	target := r.register(b, make([]byte, 64), mem.AccessRemoteRead|mem.AccessRemoteAtomic)
	sink := a.register(b, make([]byte, 8), mem.AccessLocalWrite)
	wr := remote(rdmap.SendWR{Op: op, SGL: []rdma.SGE{whole(sink)}, Add: 1}, target, 0)
	n := max(b.N, 1000)
	b.ResetTimer()
	d := rate16(b, a, wr, n)
	b.StopTimer()
	req, resp := 50, 30
	if op == rdma.OpFetchAdd {
		req, resp = 78, 38
	}
	raw := tcpRate16(b, n, req, resp)
	ours, theirs := float64(n)/d.Seconds(), float64(n)/raw.Seconds()
	b.ReportMetric(ours/1e6, "Mops/s")
	b.ReportMetric(theirs/1e6, "tcp-Mops/s")
	b.ReportMetric(ours/theirs, "ratio")
}

// BenchmarkWrite1MiB: 1 MiB Writes, 4 in flight, against raw TCP writing
// 1 MiB buffers to a reader that discards them; CRC on and off.
func BenchmarkWrite1MiB(b *testing.B) {
	for _, m := range benchModes {
		for _, crc := range []bool{false, true} {
			name := m.name + "/crc=off"
			if crc {
				name = m.name + "/crc=on"
			}
			b.Run(name, func(b *testing.B) { write1MiB(b, crc, m.noPoll) })
		}
	}
}

// write1MiB is BenchmarkWrite1MiB in one mode.
func write1MiB(b *testing.B, crc, noPoll bool) {
	const size = 1 << 20
	o := modeOpts(noPoll, false)
	o.framing.CRC = crc
	a, r := pair(b, o, o)
	dst := r.register(b, make([]byte, size), mem.AccessRemoteWrite)
	src := a.register(b, make([]byte, size), 0)
	wr := remote(rdmap.SendWR{Op: rdma.OpWrite, SGL: []rdma.SGE{whole(src)}}, dst, 0)
	n := max(b.N, 200)
	b.SetBytes(size)
	b.ResetTimer()
	d := rate16(b, a, wr, n)
	b.StopTimer()
	raw := tcpStream(b, n, size)
	ours, theirs := float64(n)*size/d.Seconds(), float64(n)*size/raw.Seconds()
	b.ReportMetric(ours/1e9, "GB/s")
	b.ReportMetric(theirs/1e9, "tcp-GB/s")
	b.ReportMetric(ours/theirs, "ratio")
}

// tcpStream writes n buffers of size octets to a reader that discards
// them and returns how long until the last octet was read.
func tcpStream(b *testing.B, n, size int) time.Duration {
	c, s := testnet.TCPPair(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 256<<10)
		total := 0
		for total < n*size {
			k, err := s.Read(buf)
			if err != nil {
				return
			}
			total += k
		}
	}()
	buf := make([]byte, size)
	start := time.Now()
	for range n {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	return time.Since(start)
}

// BenchmarkIdleQP: the heap and goroutine stacks per idle connected QP
// (64-deep queues, a 128-entry CQ each, the defaults of the public API),
// both ends in this process: b.N pairs, reported per QP.
func BenchmarkIdleQP(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { idleQPs(b, m.noPoll) })
	}
}

// idleQPs is BenchmarkIdleQP in one mode.
func idleQPs(b *testing.B, noPoll bool) {
	pairs := max(b.N, 500)
	devA, err := NewDevice(DeviceConfig{NoPoll: noPoll})
	if err != nil {
		b.Fatal(err)
	}
	defer devA.Close()
	devB, err := NewDevice(DeviceConfig{NoPoll: noPoll})
	if err != nil {
		b.Fatal(err)
	}
	defer devB.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	table := mem.NewTable(mem.TableOptions{})
	setup := Setup{Framing: fpdu.Options{CRC: true}, Params: rdmap.Params{IRD: 16, ORD: 16, RFC7306: true}}
	newQP := func(d *Device) *QP {
		cq := NewCQ(128, nil)
		q, err := New(d, Config{Table: table, PD: testPD, SendCQ: cq, RecvCQ: cq, SQDepth: 64, RQDepth: 64, MaxSGE: 4, MaxInline: 64})
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	before := heap()
	qps := make([]*QP, 0, 2*pairs)
	b.ResetTimer()
	for range pairs {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		qa, qb := newQP(devA), newQP(devB)
		if err := qa.Start(c, setup); err != nil {
			b.Fatal(err)
		}
		if err := qb.Start(s, setup); err != nil {
			b.Fatal(err)
		}
		qps = append(qps, qa, qb)
	}
	b.StopTimer()
	after := heap()
	b.ReportMetric(float64(after-before)/float64(len(qps))/1024, "KiB/QP")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
	for _, q := range qps {
		q.Close()
	}
}

// heap returns the heap in use plus the goroutine stacks, after a GC.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
