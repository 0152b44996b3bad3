// Command ring is a message ring over RDMA Write with Immediate (RFC 7306):
// the sender places each message directly into the receiver's memory, and
// the 8 bytes of Immediate Data that follow it tell the receiver where it
// is.
//
// The receiver registers a ring of K slots of S bytes with remote write
// access and accepts the sender's connection with Listener.Serve, which
// advertises the ring in the MPA private data (ServeConfig.Memory) and,
// before accepting, posts K zero-length receives (ServeConfig.Prepare):
// Immediate Data consumes a receive but places nothing in it. The sender,
// given the same K and S, connects with Dial, finds the ring with
// QP.PeerMemory and checks that it is K × S bytes.
//
// The sender starts with K credits. For each message it takes a credit and
// writes the message into the next slot with WriteWithImmediate, the
// immediate carrying the slot index (high 32 bits) and the length (low 32
// bits). The receiver's completion for that immediate comes after the
// Write was placed, so the receiver may read the slot as soon as it polls
// it (docs/semantics.md rule 2). It then reposts the receive and, every
// few messages, returns the freed slots to the sender as credits with
// SendImmediate. The sender never has more than K messages outstanding,
// so it can neither overwrite a slot still being read nor find the
// receiver out of receives (which is fatal on iWARP).
//
// Run it (both ends in one process, over loopback):
//
//	go run ./examples/ring                        # 10,000 messages, 16 slots of 256 bytes
//	go run ./examples/ring -n 100000 -slots 64 -size 4096
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/goiwarp/iwarp"
)

// config is the shape of the ring and the length of the run.
type config struct {
	slots    int // K
	slotSize int // S, at least 8 (each message starts with its sequence number)
	messages int
	batch    int // credits returned per SendImmediate
}

// badConfig names a value of a config that is out of range.
type badConfig struct {
	flag  string
	value int
	what  string
}

// check returns the first value out of range, or nil.
func (c config) check() *badConfig {
	switch {
	case c.slots < 1 || c.slots > 1<<16:
		return &badConfig{"slots", c.slots, "must be between 1 and 65536"}
	case c.slotSize < 8 || c.slotSize > 1<<20:
		return &badConfig{"size", c.slotSize, "must be between 8 and 1048576"}
	case c.messages < 0:
		return &badConfig{"n", c.messages, "must not be negative"}
	case c.batch < 1 || c.batch > c.slots:
		return &badConfig{"batch", c.batch, fmt.Sprintf("must be between 1 and -slots (%d)", c.slots)}
	}
	return nil
}

// stats summarise a run.
type stats struct {
	messages, bytes int
	creditMsgs      int // SendImmediates the receiver sent
	elapsed         time.Duration
}

// run parses the command line and runs both ends over loopback.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ring", flag.ContinueOnError)
	var cfg config
	fs.IntVar(&cfg.messages, "n", 10000, "messages to send")
	fs.IntVar(&cfg.slots, "slots", 16, "slots of the ring (K)")
	fs.IntVar(&cfg.slotSize, "size", 256, "bytes per slot (S), at least 8")
	fs.IntVar(&cfg.batch, "batch", 0, "credits per acknowledgement (default K/4)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfg.batch == 0 {
		cfg.batch = max(cfg.slots/4, 1)
	}
	if err := cfg.check(); err != nil {
		return badValue(fs, err.flag, err.value, "%s", err.what)
	}
	st, err := loopback(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d messages (%d bytes) through a ring of %d × %d bytes in %v (%.0f msg/s), %d credit messages; every payload and the order verified\n",
		st.messages, st.bytes, cfg.slots, cfg.slotSize, st.elapsed.Round(time.Millisecond),
		float64(st.messages)/st.elapsed.Seconds(), st.creditMsgs)
	return nil
}

// loopback runs a receiver and a sender in this process over TCP loopback.
func loopback(ctx context.Context, cfg config) (stats, error) {
	if err := cfg.check(); err != nil {
		return stats{}, fmt.Errorf("-%s %d: %s", err.flag, err.value, err.what)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		return stats{}, err
	}
	defer ln.Close()
	type result struct {
		creditMsgs int
		err        error
	}
	done := make(chan result, 1)
	go func() {
		n, err := receive(ctx, ln, cfg)
		if err != nil {
			cancel() // unblock the sender
		}
		done <- result{n, err}
	}()
	start := time.Now()
	sent, err := send(ctx, ln.Addr().String(), cfg)
	elapsed := time.Since(start)
	if err != nil {
		cancel() // unblock the receiver
	}
	r := <-done
	if err := errors.Join(r.err, err); err != nil {
		return stats{}, err
	}
	return stats{messages: cfg.messages, bytes: sent, creditMsgs: r.creditMsgs, elapsed: elapsed}, nil
}

// message fills p with message seq: its sequence number, then bytes
// derived from it. Lengths cycle through 8..len(p).
func message(p []byte, seq int) []byte {
	p = p[:8+seq%(len(p)-7)]
	binary.LittleEndian.PutUint64(p, uint64(seq))
	for i := 8; i < len(p); i++ {
		p[i] = byte(seq*31 + i)
	}
	return p
}

// checkMessage reports whether p is message seq.
func checkMessage(p []byte, seq, slotSize int) error {
	if want := 8 + seq%(slotSize-7); len(p) != want {
		return fmt.Errorf("message %d: %d bytes, want %d", seq, len(p), want)
	}
	if got := binary.LittleEndian.Uint64(p); got != uint64(seq) {
		return fmt.Errorf("message %d arrived in place of %d", got, seq)
	}
	for i := 8; i < len(p); i++ {
		if p[i] != byte(seq*31+i) {
			return fmt.Errorf("message %d: byte %d corrupt", seq, i)
		}
	}
	return nil
}

// postRecvs posts n zero-length receives, with IDs 0 to n-1.
func postRecvs(qp *iwarp.QP, n int) error {
	wrs := make([]iwarp.RecvWR, n)
	for i := range wrs {
		wrs[i].ID = uint64(i)
	}
	return qp.PostRecv(wrs...)
}

// receive serves one connection: it exposes the ring and consumes
// cfg.messages messages in order, returning credits as it goes. It returns
// the number of credit messages it sent.
func receive(ctx context.Context, ln *iwarp.Listener, cfg config) (int, error) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		return 0, err
	}
	ring := make([]byte, cfg.slots*cfg.slotSize)
	ringMR, err := pd.RegisterMemory(ring, iwarp.AccessRemoteWrite)
	if err != nil {
		return 0, err
	}
	defer ringMR.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		served     bool // the Handle ran
		creditMsgs int
		herr       error
	)
	err = ln.Serve(sctx, &iwarp.ServeConfig{
		Memory:  []*iwarp.MR{ringMR},
		QP:      iwarp.QPConfig{SendQueueDepth: 1, RecvQueueDepth: cfg.slots},
		Prepare: func(qp *iwarp.QP) error { return postRecvs(qp, cfg.slots) }, // one per slot
		Handle: func(ctx context.Context, qp *iwarp.QP) {
			creditMsgs, herr = consume(ctx, qp, ring, cfg)
			served = true
			stop() // one connection is the whole run
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if !served {
		return 0, err
	}
	return creditMsgs, herr
}

// consume reads cfg.messages messages from the ring in order, returning
// credits as it goes, and waits for the sender to disconnect. It returns the
// number of credit messages it sent.
func consume(ctx context.Context, qp *iwarp.QP, ring []byte, cfg config) (int, error) {
	cq := qp.RecvCQ()
	creditMsgs, freed := 0, 0
	for seq := 0; seq < cfg.messages; seq++ {
		c, err := cq.Next(ctx)
		if err != nil {
			return creditMsgs, err
		}
		if c.Status != iwarp.StatusSuccess || !c.HasImmediate {
			return creditMsgs, fmt.Errorf("receive %d: %v, immediate %v: %v", seq, c.Status, c.HasImmediate, c.Err)
		}
		slot, n := int(c.Immediate>>32), int(uint32(c.Immediate))
		if slot != seq%cfg.slots || n > cfg.slotSize {
			return creditMsgs, fmt.Errorf("message %d: slot %d, length %d", seq, slot, n)
		}
		// The Write into the slot was placed before this completion.
		if err := checkMessage(ring[slot*cfg.slotSize:][:n], seq, cfg.slotSize); err != nil {
			return creditMsgs, err
		}
		// The slot is free again: repost its receive first, then tell the
		// sender (a credit must never arrive before its receive).
		if err := qp.PostRecv(iwarp.RecvWR{ID: c.ID}); err != nil {
			return creditMsgs, err
		}
		if freed++; freed == cfg.batch || seq == cfg.messages-1 {
			if err := qp.ImmediateData(ctx, uint64(freed), 0); err != nil {
				return creditMsgs, err
			}
			creditMsgs++
			freed = 0
		}
	}
	// The sender disconnects once every credit is back.
	select {
	case <-qp.Done():
	case <-ctx.Done():
		return creditMsgs, ctx.Err()
	}
	if err := qp.Err(); !errors.Is(err, iwarp.ErrPeerDisconnected) {
		return creditMsgs, err
	}
	return creditMsgs, nil
}

// send connects to the receiver at addr and writes cfg.messages messages
// into its ring, never more than K unacknowledged. It returns the payload
// bytes sent.
func send(ctx context.Context, addr string, cfg config) (int, error) {
	// Credit messages outstanding: at most K/batch full batches plus the
	// final partial one.
	creditRecvs := cfg.slots/cfg.batch + 1
	qp, err := iwarp.Dial(ctx, addr, &iwarp.DialConfig{
		QP:      iwarp.QPConfig{SendQueueDepth: 1, RecvQueueDepth: creditRecvs},
		Prepare: func(qp *iwarp.QP) error { return postRecvs(qp, creditRecvs) },
	})
	if err != nil {
		return 0, err
	}
	defer qp.Close()
	mem, err := qp.PeerMemory()
	if err != nil {
		return 0, err
	}
	ring := mem[0]
	if int64(ring.Len) != int64(cfg.slots)*int64(cfg.slotSize) {
		return 0, fmt.Errorf("receiver advertised a ring of %d bytes, not %d slots of %d bytes", ring.Len, cfg.slots, cfg.slotSize)
	}

	src := make([]byte, cfg.slotSize)
	srcMR, err := qp.PD().RegisterMemory(src, 0)
	if err != nil {
		return 0, err
	}
	defer srcMR.Close()

	credits, total := cfg.slots, 0
	// waitCredits blocks for the receiver's next acknowledgement.
	waitCredits := func() error {
		c, err := qp.RecvCQ().Next(ctx)
		if err != nil {
			return err
		}
		if c.Status != iwarp.StatusSuccess || !c.HasImmediate {
			return fmt.Errorf("credit receive: %v: %v", c.Status, c.Err)
		}
		credits += int(c.Immediate)
		return qp.PostRecv(iwarp.RecvWR{ID: c.ID})
	}
	for seq := 0; seq < cfg.messages; seq++ {
		for credits == 0 {
			if err := waitCredits(); err != nil {
				return total, err
			}
		}
		credits--
		slot := seq % cfg.slots
		// src is ours again: the previous WriteWithImmediate completed.
		p := message(src, seq)
		dst, err := ring.Slice(uint32(slot*cfg.slotSize), uint32(cfg.slotSize))
		if err != nil {
			return total, err
		}
		imm := uint64(slot)<<32 | uint64(len(p))
		if err := qp.WriteWithImmediate(ctx, dst, imm, srcMR.SGE(0, len(p))); err != nil {
			return total, err
		}
		total += len(p)
	}
	// Every message is consumed when all the credits are back.
	for credits < cfg.slots {
		if err := waitCredits(); err != nil {
			return total, err
		}
	}
	if credits != cfg.slots {
		return total, fmt.Errorf("%d credits back, ring has %d slots", credits, cfg.slots)
	}
	return total, qp.Disconnect(ctx)
}
