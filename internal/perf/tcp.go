package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
)

// The raw TCP baseline of "iwarp perf": the same process layout, plain Go
// TCP with TCP_NODELAY on both sides and default socket buffers. A
// connection starts with a 16-byte descriptor (kind, size); the server
// ends it with a 48-byte report (bytes it received, its counters).

const (
	tcpSink     = 1 // the client streams, the server reads and reports
	tcpSource   = 2 // the server streams until the client sends a byte
	tcpPingPong = 3 // the server echoes size-byte messages (one or more at a time)
	tcpRepLen   = 48
)

// serveRawTCP serves one baseline connection.
func serveRawTCP(c net.Conn) {
	defer c.Close()
	_ = c.(*net.TCPConn).SetNoDelay(true)
	var hb [16]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return
	}
	kind, size := hb[0], int(binary.BigEndian.Uint32(hb[4:]))
	if size < 1 || size > 1<<26 {
		return
	}
	var n uint64
	switch kind {
	case tcpSink:
		buf := make([]byte, min(max(size, 64<<10), 1<<20))
		for {
			k, err := c.Read(buf)
			n += uint64(k)
			if err != nil {
				break
			}
		}
	case tcpSource:
		var stop atomic.Bool
		go func() {
			var b [1]byte
			_, _ = c.Read(b[:])
			stop.Store(true)
		}()
		buf := make([]byte, size)
		for !stop.Load() {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	case tcpPingPong:
		// Echo every whole message as soon as it is in: one at a time in a
		// ping-pong, all those read together when the client keeps several
		// outstanding (runTCPPipelined).
		buf := make([]byte, max(size, min(64*size, 64<<10)))
		have := 0
		for {
			k, err := c.Read(buf[have:])
			have += k
			if whole := have / size * size; whole > 0 {
				if _, err := c.Write(buf[:whole]); err != nil {
					return
				}
				n += uint64(whole / size)
				have = copy(buf, buf[whole:have])
			}
			if err != nil {
				break
			}
		}
	default:
		return
	}
	rep := binary.BigEndian.AppendUint64(nil, n)
	rep = takeSnapshot(false).appendTo(rep)
	rep = append(rep, make([]byte, tcpRepLen-len(rep))...)
	_, _ = c.Write(rep)
}

// dialTCP opens a baseline connection of the given kind.
func (ep *Endpoint) dialTCP(ctx context.Context, kind byte, size int) (*net.TCPConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", ep.tcpAddr)
	if err != nil {
		return nil, err
	}
	c := nc.(*net.TCPConn)
	_ = c.SetNoDelay(true)
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	var hb [16]byte
	hb[0] = kind
	binary.BigEndian.PutUint32(hb[4:], uint32(size))
	if _, err := c.Write(hb[:]); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func decodeTCPReport(b []byte) (uint64, sysSnapshot) {
	return binary.BigEndian.Uint64(b), decodeSysSnapshot(b[8:])
}

// runTCPStream measures raw TCP throughput: the client writes size-byte
// application writes (write), or the server does and the client reads
// (read); bytes count once the sink has them.
func (ep *Endpoint) runTCPStream(ctx context.Context, size int, read bool, cfg *Config, prog *progress) (Result, error) {
	res := Result{Op: "stream", Mode: "bw", Transport: "tcp", Size: size, QPs: 1, Depth: 1}
	kind := byte(tcpSink)
	if read {
		kind, res.Op = tcpSource, "stream-read"
	}
	// The server's counters at the start come from a stat request: its
	// CPU during the test is the difference to those in its report.
	srvBefore, err := ep.stat(ctx)
	if err != nil {
		return res, err
	}
	c, err := ep.dialTCP(ctx, kind, size)
	if err != nil {
		return res, err
	}
	defer c.Close()
	buf := make([]byte, size)
	var moved atomic.Uint64
	before := takeSnapshot(false)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	stopProg := prog.track(fmt.Sprintf("tcp %s %d B", res.Op, size), start, cfg.Duration, func() (uint64, int) { return moved.Load(), 1 })
	defer stopProg()
	limit := uint64(cfg.Iters) * uint64(size)
	var rep []byte
	if !read {
		for n := uint64(0); ; n += uint64(size) {
			if (cfg.Iters > 0 && n >= limit) || (cfg.Iters == 0 && !time.Now().Before(deadline)) {
				break
			}
			if _, err := c.Write(buf); err != nil {
				return res, err
			}
			moved.Store(n)
		}
		if err := c.CloseWrite(); err != nil {
			return res, err
		}
		rep = make([]byte, tcpRepLen)
		if _, err := io.ReadFull(c, rep); err != nil {
			return res, fmt.Errorf("no report: %v", err)
		}
	} else {
		// Read to EOF; the report is the last tcpRepLen bytes.
		var tail []byte
		var total uint64
		stopped := false
		for {
			k, err := c.Read(buf)
			total += uint64(k)
			tail = append(tail, buf[:k]...)
			if len(tail) > tcpRepLen {
				tail = tail[len(tail)-tcpRepLen:]
			}
			moved.Store(total)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					return res, err
				}
				break
			}
			if !stopped && ((cfg.Iters > 0 && total >= limit) || (cfg.Iters == 0 && !time.Now().Before(deadline))) {
				stopped = true
				if _, err := c.Write([]byte{1}); err != nil {
					return res, err
				}
			}
		}
		if total < tcpRepLen {
			return res, errors.New("no report")
		}
		binary.BigEndian.PutUint64(tail, total-tcpRepLen)
		rep = tail
	}
	end := time.Now()
	after := takeSnapshot(false)
	n, srvAfter := decodeTCPReport(rep)
	res.Ops = n / uint64(size)
	res.setRates(end.Sub(start))
	res.MBps = float64(n) / end.Sub(start).Seconds() / 1e6
	res.setCPU(before, after, srvBefore, srvAfter)
	res.ClientAllocsPerOp, res.ServerAllocsPerOp = 0, 0
	return res, nil
}

// runTCPPingPong measures raw TCP round trips of size-byte messages.
func (ep *Endpoint) runTCPPingPong(ctx context.Context, size int, cfg *Config, prog *progress, samples []time.Duration) (Result, error) {
	res := Result{Op: "pingpong", Mode: "lat", Transport: "tcp", Size: size, QPs: 1, Depth: 1}
	c, err := ep.dialTCP(ctx, tcpPingPong, size)
	if err != nil {
		return res, err
	}
	defer c.Close()
	buf := make([]byte, size)
	once := func() error {
		if _, err := c.Write(buf); err != nil {
			return err
		}
		_, err := io.ReadFull(c, buf)
		return err
	}
	k, elapsed, err := sampleRoundTrips(fmt.Sprintf("tcp pingpong %d B", size), prog, cfg, samples, nil, once, nil)
	if err != nil {
		return res, err
	}
	res.Ops = uint64(k)
	res.setRates(elapsed)
	res.Lat = bench.Summarize(samples[:k])
	_ = c.CloseWrite()
	return res, nil
}
