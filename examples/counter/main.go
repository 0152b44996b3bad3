// Command counter is a lock/counter service built on RFC 7306 remote
// atomics: several client processes update one server's memory without the
// server's CPU taking part in any update.
//
// The server registers an 8-byte aligned region of three 64-bit words with
// remote atomic, read and write access:
//
//	offset  0: a spinlock (0 = free, otherwise the holder's id)
//	offset  8: a counter updated only with remote FetchAdd
//	offset 16: a plain counter (little-endian) updated by RDMA Read and
//	           RDMA Write, guarded by the spinlock
//
// It accepts any number of connections and, as the first message on each,
// Sends the region's RemoteBuffer (RemoteBuffer.MarshalBinary); the client
// posts a receive for it before connecting. Each client then does N
// FetchAdds on the counter, and N rounds of "CompareSwap the lock from 0 to
// my id, Read the plain counter, add one, Write it back, CompareSwap the lock
// back to 0". RDMAP processes the messages of one connection in order (RFC
// 7306 §7), so the Write is placed before the releasing CompareSwap, and the
// next holder's Read sees it.
//
// Run it:
//
//	go run ./examples/counter                        # demo: server + 3 client processes
//	go run ./examples/counter -clients 5 -n 5000     # a bigger demo
//	go run ./examples/counter -serve -addr :7471     # a server, until interrupted
//	go run ./examples/counter -connect HOST:7471 -n 1000   # one client
//
// The demo starts the server in-process and re-executes its own binary
// (os.Executable) with -connect for each client, waits for them, and checks
// that both counters equal clients × N.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// Offsets of the three words of the shared region.
const (
	lockOff    = 0
	counterOff = 8
	guardedOff = 16
	regionLen  = 24
)

// run parses the command line and runs the server, one client or the demo.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("counter", flag.ContinueOnError)
	serve := fs.Bool("serve", false, "run a server until interrupted")
	addr := fs.String("addr", "127.0.0.1:7471", "listen address of -serve")
	connect := fs.String("connect", "", "run one client against the server at this address")
	n := fs.Int("n", 1000, "FetchAdds and lock rounds per client")
	clients := fs.Int("clients", 3, "client processes of the demo (1 to 64)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 0 || *n > 1e8 {
		return badValue(fs, "n", *n, "must be between 0 and 100000000")
	}
	if *clients < 1 || *clients > 64 {
		return badValue(fs, "clients", *clients, "must be between 1 and 64")
	}
	switch {
	case *serve:
		s, err := startServer(*addr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "serving on %v\n", s.ln.Addr())
		<-ctx.Done()
		return s.Close()
	case *connect != "":
		return runClient(ctx, *connect, *n)
	default:
		counter, guarded, err := demo(ctx, *clients, *n)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d clients × %d: FetchAdd counter %d, lock-guarded counter %d (both correct)\n",
			*clients, *n, counter, guarded)
		return nil
	}
}

// demo runs a server in this process and clients child processes of n
// rounds each, and returns the two counters once every client has exited.
// It fails if they are not clients × n.
func demo(ctx context.Context, clients, n int) (counter, guarded uint64, err error) {
	s, err := startServer("127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		go func() {
			cmd := exec.CommandContext(ctx, exe, "-connect", s.ln.Addr().String(), "-n", strconv.Itoa(n))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err != nil {
				err = fmt.Errorf("client %d: %w: %s", i, err, bytes.TrimSpace(out.Bytes()))
			}
			errs <- err
		}()
	}
	for i := 0; i < clients; i++ {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return 0, 0, err
	}
	counter, guarded, err = s.counts()
	if want := uint64(clients * n); err == nil && (counter != want || guarded != want) {
		err = fmt.Errorf("counters %d and %d, want %d", counter, guarded, want)
	}
	return counter, guarded, err
}

// server owns the shared region and serves its RemoteBuffer to every
// connection.
type server struct {
	ln     *iwarp.Listener
	pd     *iwarp.PD
	region *iwarp.MR
	adv    *iwarp.MR // the region's RemoteBuffer encoding, the first message
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	qps    map[*iwarp.QP]bool
}

// startServer registers the region, listens on addr and accepts
// connections in the background until Close.
func startServer(addr string) (*server, error) {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	// Remote atomics need 8-byte aligned memory: allocate words.
	words := make([]uint64, regionLen/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), regionLen)
	region, err := pd.RegisterMemory(buf, iwarp.AccessRemoteAtomic|iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	enc, err := region.Remote().MarshalBinary()
	if err != nil {
		return nil, err
	}
	adv, err := pd.RegisterMemory(enc, 0)
	if err != nil {
		return nil, err
	}
	ln, err := iwarp.Listen("tcp", addr, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{ln: ln, pd: pd, region: region, adv: adv, ctx: ctx, cancel: cancel, qps: make(map[*iwarp.QP]bool)}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *server) acceptLoop() {
	defer s.wg.Done()
	for {
		req, err := s.ln.Accept(s.ctx)
		if err != nil {
			return // the listener was closed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.handle(req); err != nil && s.ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "counter: connection from %v: %v\n", req.RemoteAddr(), err)
			}
		}()
	}
}

// handle accepts one connection, Sends it the region's RemoteBuffer and
// keeps the QP until the client leaves. The server posts no receives: the
// clients only use one-sided operations after the first message.
func (s *server) handle(req *iwarp.ConnRequest) error {
	cq, err := s.pd.Device().NewCQ(2, nil)
	if err != nil {
		req.Reject(nil)
		return err
	}
	qp, err := s.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 1, RecvQueueDepth: 1})
	if err != nil {
		req.Reject(nil)
		return err
	}
	s.mu.Lock()
	s.qps[qp] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.qps, qp)
		s.mu.Unlock()
		qp.Close()
		cq.Close()
	}()
	if err := req.Accept(s.ctx, qp, nil); err != nil {
		return err
	}
	if err := qp.Send(s.ctx, s.adv.SGE(0, iwarp.RemoteBufferLen)); err != nil {
		return err
	}
	<-qp.Done()
	if err := qp.Err(); !errors.Is(err, iwarp.ErrPeerDisconnected) && !errors.Is(err, iwarp.ErrQPClosed) {
		return err
	}
	return nil
}

// counts returns the FetchAdd counter and the lock-guarded counter.
func (s *server) counts() (counter, guarded uint64, err error) {
	// Load the lock word first: the last client operation on the region is
	// an atomic release, which orders every Write placed before it before
	// this load (Go's memory model and the race detector see the
	// synchronisation through the atomic word).
	if _, err := s.region.AtomicLoad(lockOff); err != nil {
		return 0, 0, err
	}
	if counter, err = s.region.AtomicLoad(counterOff); err != nil {
		return 0, 0, err
	}
	if guarded, err = s.region.AtomicLoad(guardedOff); err != nil {
		return 0, 0, err
	}
	// The clients store the plain counter little-endian; AtomicLoad gives
	// host order.
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], guarded)
	return counter, binary.LittleEndian.Uint64(b[:]), nil
}

// Close stops listening, closes every connection and waits for the
// handlers.
func (s *server) Close() error {
	err := s.ln.Close()
	s.cancel()
	s.mu.Lock()
	for qp := range s.qps {
		qp.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(err, s.adv.Close(), s.region.Close())
}

// runClient connects to the server at addr and does n FetchAdds and n
// lock-guarded read-modify-write rounds.
func runClient(ctx context.Context, addr string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	cq, err := dev.NewCQ(8, nil)
	if err != nil {
		return err
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 4})
	if err != nil {
		return err
	}
	defer qp.Close()

	// The server Sends the region's RemoteBuffer at once: post the receive
	// before connecting (a Send that finds no receive is fatal on iWARP).
	advBuf := make([]byte, iwarp.RemoteBufferLen)
	advMR, err := pd.RegisterMemory(advBuf, iwarp.AccessLocalWrite)
	if err != nil {
		return err
	}
	if err := qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{advMR.SGE(0, len(advBuf))}}); err != nil {
		return err
	}
	if err := qp.Connect(ctx, "tcp", addr, nil); err != nil {
		return err
	}
	c, err := cq.Next(ctx)
	if err != nil {
		return err
	}
	if c.Status != iwarp.StatusSuccess || c.Len != iwarp.RemoteBufferLen {
		return fmt.Errorf("first message: %v, %d bytes: %v", c.Status, c.Len, c.Err)
	}
	var region iwarp.RemoteBuffer
	if err := region.UnmarshalBinary(advBuf); err != nil {
		return err
	}
	lock, err := region.Slice(lockOff, 8)
	if err != nil {
		return err
	}
	counter, err := region.Slice(counterOff, 8)
	if err != nil {
		return err
	}
	guarded, err := region.Slice(guardedOff, 8)
	if err != nil {
		return err
	}

	for i := 0; i < n; i++ {
		if _, err := qp.FetchAdd(ctx, counter, 1); err != nil {
			return fmt.Errorf("FetchAdd: %w", err)
		}
	}

	local := make([]byte, 8)
	localMR, err := pd.RegisterMemory(local, iwarp.AccessLocalWrite)
	if err != nil {
		return err
	}
	me := uint64(os.Getpid()) // nonzero: the lock holder's id
	for i := 0; i < n; i++ {
		for { // acquire
			old, err := qp.CompareSwap(ctx, lock, 0, me)
			if err != nil {
				return fmt.Errorf("lock: %w", err)
			}
			if old == 0 {
				break
			}
		}
		if err := qp.Read(ctx, guarded, localMR.SGE(0, 8)); err != nil {
			return fmt.Errorf("read: %w", err)
		}
		binary.LittleEndian.PutUint64(local, binary.LittleEndian.Uint64(local)+1)
		if err := qp.Write(ctx, guarded, localMR.SGE(0, 8)); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		// Release. The Write is placed before this CompareSwap runs, so the
		// next holder reads the new value.
		old, err := qp.CompareSwap(ctx, lock, me, 0)
		if err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		if old != me {
			return fmt.Errorf("lock held by %d, not by me (%d)", old, me)
		}
	}
	return qp.Disconnect(ctx)
}
