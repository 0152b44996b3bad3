// Command counter is a lock/counter service built on RFC 7306 remote
// atomics: several client processes update one server's memory without the
// server's CPU taking part in any update.
//
// The server registers three 64-bit words (PD.RegisterWords, aligned as
// remote atomics require) with remote atomic, read and write access:
//
//	word 0 (offset  0): a spinlock (0 = free, otherwise the holder's id)
//	word 1 (offset  8): a counter updated only with remote FetchAdd
//	word 2 (offset 16): a plain counter (little-endian) updated by RDMA Read
//	                    and RDMA Write, guarded by the spinlock
//
// It accepts any number of connections with Listener.Serve, which
// advertises the region in the MPA private data of each (ServeConfig.Memory);
// a client connects with Dial and finds the region with QP.PeerMemory. Each
// client then does N FetchAdds on the counter, and N rounds of "CompareSwap
// the lock from 0 to my id, Read the plain counter, add one, Write it back,
// CompareSwap the lock back to 0". RDMAP processes the messages of one
// connection in order (RFC 7306 §7), so the Write is placed before the
// releasing CompareSwap, and the next holder's Read sees it.
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
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp"
)

// The three words of the shared region; word i is at offset 8*i.
const (
	lockWord = iota
	counterWord
	guardedWord
	regionWords
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
	counter, guarded = s.counts()
	if want := uint64(clients * n); counter != want || guarded != want {
		err = fmt.Errorf("counters %d and %d, want %d", counter, guarded, want)
	}
	return counter, guarded, err
}

// server owns the shared region and advertises it to every connection.
type server struct {
	ln     *iwarp.Listener
	dev    *iwarp.Device
	region *iwarp.MR
	words  []uint64 // the region's words
	stop   context.CancelFunc
	served chan error // Serve's return
}

// startServer registers the region, listens on addr and serves
// connections in the background until Close.
func startServer(addr string) (*server, error) {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	// Remote atomics need 8-byte aligned words.
	region, words, err := pd.RegisterWords(regionWords, iwarp.AccessRemoteAtomic|iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	ln, err := iwarp.Listen("tcp", addr, nil)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &server{ln: ln, dev: dev, region: region, words: words, stop: stop, served: make(chan error, 1)}
	// Serve accepts every connection on a QP of its own, with the region
	// advertised in the MPA private data. The server posts no receives:
	// the clients only use one-sided operations.
	go func() {
		s.served <- ln.Serve(ctx, &iwarp.ServeConfig{
			Memory: []*iwarp.MR{region},
			Handle: watch,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)), // requests it could not accept
		})
	}()
	return s, nil
}

// watch keeps a connection until the client leaves, and reports any other
// end of it.
func watch(ctx context.Context, qp *iwarp.QP) {
	select {
	case <-qp.Done():
	case <-ctx.Done():
		return // the server is closing
	}
	if err := qp.Err(); ctx.Err() == nil && !errors.Is(err, iwarp.ErrPeerDisconnected) {
		fmt.Fprintf(os.Stderr, "counter: connection from %v: %v\n", qp.Attributes().PeerAddr, err)
	}
}

// counts returns the FetchAdd counter and the lock-guarded counter.
func (s *server) counts() (counter, guarded uint64) {
	// Load the lock word first: the last client operation on the region is
	// an atomic release, which orders every Write placed before it before
	// this load (Go's memory model and the race detector see the
	// synchronisation through the atomic word).
	atomic.LoadUint64(&s.words[lockWord])
	counter = atomic.LoadUint64(&s.words[counterWord])
	// The clients store the plain counter little-endian; the word is in
	// host order.
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], atomic.LoadUint64(&s.words[guardedWord]))
	return counter, binary.LittleEndian.Uint64(b[:])
}

// Close stops serving (closing every connection), stops listening and
// releases the region.
func (s *server) Close() error {
	s.stop()
	err := <-s.served
	if errors.Is(err, context.Canceled) {
		err = nil // Serve ended by stop
	}
	return errors.Join(err, s.ln.Close(), s.region.Close(), s.dev.Close())
}

// runClient connects to the server at addr and does n FetchAdds and n
// lock-guarded read-modify-write rounds.
func runClient(ctx context.Context, addr string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	qp, err := iwarp.Dial(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer qp.Close()
	mem, err := qp.PeerMemory()
	if err != nil {
		return err
	}
	lock, err := mem[0].Slice(8*lockWord, 8)
	if err != nil {
		return err
	}
	counter, err := mem[0].Slice(8*counterWord, 8)
	if err != nil {
		return err
	}
	guarded, err := mem[0].Slice(8*guardedWord, 8)
	if err != nil {
		return err
	}

	for i := 0; i < n; i++ {
		if _, err := qp.FetchAdd(ctx, counter, 1); err != nil {
			return fmt.Errorf("FetchAdd: %w", err)
		}
	}

	local := make([]byte, 8)
	localMR, err := qp.PD().RegisterMemory(local, iwarp.AccessLocalWrite)
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
