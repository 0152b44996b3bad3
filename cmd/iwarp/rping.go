package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/goiwarp/iwarp"
)

func init() {
	register(&command{
		name:  "rping",
		short: "rping client or server, wire-compatible with rdmacm-utils' rping",
		run:   runRping,
	})
}

// rping's protocol (librdmacm/examples/rping.c): per iteration the client
// Sends the advertisement {addr, rkey, size} of its "start" buffer; the
// server RDMA Reads it, Sends a go-ahead, the client Sends the
// advertisement of its "rdma" buffer, the server RDMA Writes what it read
// there and Sends a go-ahead again. The advertisement is our
// RemoteBuffer encoding: TO, STag, length, big-endian.

type rpingOpts struct {
	server, client bool
	addr           string
	port           int
	count          int
	size           int
	verbose        bool
	validate       bool
	persistent     bool          // server: serve connections until interrupted
	dev            *iwarp.Device // shared by every connection (one expvar endpoint)
	debug          bool          // print connection events
	expvar         string
	conn           iwarp.ConnOptions
}

func runRping(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o rpingOpts
	fs.BoolVar(&o.server, "s", false, "server side")
	fs.BoolVar(&o.client, "c", false, "client side")
	fs.StringVar(&o.addr, "a", "127.0.0.1", "address to connect to (client) or listen on (server)")
	fs.IntVar(&o.port, "p", 7174, "port")
	fs.IntVar(&o.count, "C", 0, "ping count (0: forever; the server serves until the client disconnects)")
	fs.IntVar(&o.size, "S", 100, "ping data size (at least 16 bytes; rping's minimum)")
	fs.BoolVar(&o.verbose, "v", false, "display ping data")
	fs.BoolVar(&o.validate, "V", false, "validate ping data")
	fs.BoolVar(&o.persistent, "P", false, "persistent server: serve any number of clients, each on its own connection, until interrupted")
	fs.BoolVar(&o.debug, "d", false, "debug: print connection events")
	fs.StringVar(&o.expvar, "expvar", "", "serve the Device's counters as expvar JSON on this address (/debug/vars)")
	noCRC := fs.Bool("nocrc", false, "do not ask for MPA CRCs")
	rev1 := fs.Bool("mpa1", false, "use MPA revision 1")
	noP2P := fs.Bool("nop2p", false, "do not use RFC 6581 peer-to-peer mode")
	noExt := fs.Bool("noext", false, "offer no RDMAP extension (behave like a peer without RFC 7306 and V2)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.server == o.client {
		fmt.Fprintln(stderr, "iwarp rping: give exactly one of -s and -c")
		return 2
	}
	if o.size < 16 || o.size > 1<<30 {
		fmt.Fprintln(stderr, "iwarp rping: -S must be 16 .. 1<<30")
		return 2
	}
	o.conn.NoCRC, o.conn.NoP2P, o.conn.NoExtensions = *noCRC, *noP2P, *noExt
	if *rev1 {
		o.conn.MPARevision = 1
	}
	o.dev = iwarp.NewDevice(nil)
	if o.expvar != "" {
		if err := serveExpvar(o.expvar, o.dev); err != nil {
			fmt.Fprintf(stderr, "iwarp rping: %v\n", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if o.server {
		err = rpingServer(ctx, &o, stdout, stderr)
	} else {
		err = rpingClient(ctx, &o, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "iwarp rping: %v\n", err)
		return 1
	}
	return 0
}

// rpingEnd holds one side's resources.
type rpingEnd struct {
	pd      *iwarp.PD
	cq      *iwarp.CQ
	qp      *iwarp.QP
	recvMR  *iwarp.MR // the 16-byte receive buffer
	sendMR  *iwarp.MR // the 16-byte send buffer
	startMR *iwarp.MR // client: the buffer the server reads; server: unused
	rdmaMR  *iwarp.MR // client: the buffer the server writes; server: its Read sink / Write source
}

// close releases the connection's QP and memory (a persistent server
// serves any number of connections).
func (e *rpingEnd) close() {
	e.qp.Close()
	for _, mr := range []*iwarp.MR{e.recvMR, e.sendMR, e.startMR, e.rdmaMR} {
		if mr != nil {
			mr.Close()
		}
	}
	e.cq.Close()
}

// newRpingEnd allocates one connection's resources on o.dev.
func newRpingEnd(o *rpingOpts) (*rpingEnd, error) {
	pd, err := o.dev.AllocPD()
	if err != nil {
		return nil, err
	}
	cq, err := o.dev.NewCQ(16, nil)
	if err != nil {
		return nil, err
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 2, MaxSGE: 1, IRD: 1, ORD: 1})
	if err != nil {
		return nil, err
	}
	e := &rpingEnd{pd: pd, cq: cq, qp: qp}
	reg := func(n int, acc iwarp.Access) *iwarp.MR {
		if err != nil {
			return nil
		}
		var mr *iwarp.MR
		mr, err = pd.RegisterMemory(make([]byte, n), acc)
		return mr
	}
	e.recvMR = reg(iwarp.RemoteBufferLen, iwarp.AccessLocalWrite)
	e.sendMR = reg(iwarp.RemoteBufferLen, 0)
	e.startMR = reg(o.size, iwarp.AccessRemoteRead)
	e.rdmaMR = reg(o.size, iwarp.AccessLocalWrite|iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	return e, e.postRecv()
}

func (e *rpingEnd) postRecv() error {
	return e.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{e.recvMR.SGE(0, iwarp.RemoteBufferLen)}})
}

// recv waits for the next message, reposts the receive, and returns the
// message's bytes.
func (e *rpingEnd) recv(ctx context.Context) ([]byte, error) {
	for {
		c, err := e.cq.Next(ctx)
		if err != nil {
			return nil, err
		}
		if c.Op != iwarp.OpRecv {
			if c.Status != iwarp.StatusSuccess {
				return nil, fmt.Errorf("%v completed %v: %v", c.Op, c.Status, c.Err)
			}
			continue
		}
		if c.Status != iwarp.StatusSuccess {
			if qerr := e.qp.Err(); qerr != nil {
				return nil, qerr
			}
			return nil, fmt.Errorf("receive %v: %v", c.Status, c.Err)
		}
		msg := append([]byte(nil), e.recvMR.Bytes()[:c.Len]...)
		return msg, e.postRecv()
	}
}

// send Sends a 16-byte advertisement (or the server's go-ahead).
func (e *rpingEnd) send(ctx context.Context, adv iwarp.RemoteBuffer) error {
	b, _ := adv.AppendBinary(e.sendMR.Bytes()[:0])
	_ = b
	return e.qp.Send(ctx, e.sendMR.SGE(0, iwarp.RemoteBufferLen))
}

func rpingClient(ctx context.Context, o *rpingOpts, w io.Writer) error {
	e, err := newRpingEnd(o)
	if err != nil {
		return err
	}
	defer e.qp.Close()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = e.qp.Connect(cctx, "tcp", net.JoinHostPort(o.addr, strconv.Itoa(o.port)), &o.conn)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	start, rdma := e.startMR.Bytes(), e.rdmaMR.Bytes()
	startChar := byte(65)
	for ping := 0; o.count == 0 || ping < o.count; ping++ {
		cc := copy(start, fmt.Sprintf("rdma-ping-%d: ", ping))
		c := startChar
		for i := cc; i < len(start); i++ {
			start[i] = c
			if c++; c > 122 {
				c = 65
			}
		}
		if startChar++; startChar > 122 {
			startChar = 65
		}
		start[len(start)-1] = 0
		if err := e.send(ctx, e.startMR.Remote()); err != nil {
			return err
		}
		if _, err := e.recv(ctx); err != nil {
			return fmt.Errorf("waiting for the server's go-ahead: %w", err)
		}
		if err := e.send(ctx, e.rdmaMR.Remote()); err != nil {
			return err
		}
		if _, err := e.recv(ctx); err != nil {
			return fmt.Errorf("waiting for the server's write-complete: %w", err)
		}
		if o.validate && !bytes.Equal(start, rdma) {
			return errors.New("data mismatch")
		}
		if o.verbose {
			fmt.Fprintf(w, "ping data: %s\n", cstring(rdma))
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return e.qp.Disconnect(dctx)
}

func cstring(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// rpingServer listens and serves one client, or with -P every client
// concurrently until ctx ends (rping's persistent server; a client's
// failure is reported and does not stop the others).
func rpingServer(ctx context.Context, o *rpingOpts, w, errw io.Writer) error {
	ln, err := iwarp.Listen("tcp", net.JoinHostPort(o.addr, strconv.Itoa(o.port)), nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	if !o.persistent {
		req, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		return rpingServe(ctx, o, req, w)
	}
	var mu sync.Mutex // serialises the output of concurrent clients
	lw := &lockedWriter{w: w, mu: &mu}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		req, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the persistent server's normal end
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			peer := req.RemoteAddr()
			if o.debug {
				fmt.Fprintf(lw, "connection request from %v\n", peer)
			}
			err := rpingServe(ctx, o, req, lw)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
				// Interrupted while this client was still being served
				// (or was disconnecting): the persistent server's end.
			case err != nil:
				fmt.Fprintf(errw, "iwarp rping: client %v: %v\n", peer, err)
			case o.debug:
				fmt.Fprintf(w, "client %v done\n", peer)
			}
		}()
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// rpingServe runs rping's server side on one connection request until the
// client disconnects.
func rpingServe(ctx context.Context, o *rpingOpts, req *iwarp.ConnRequest, w io.Writer) error {
	e, err := newRpingEnd(o)
	if err != nil {
		_ = req.Reject(nil)
		return err
	}
	defer e.close()
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = req.Accept(actx, e.qp, &o.conn)
	cancel()
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	rdma := e.rdmaMR.Bytes()
	for {
		msg, err := e.recv(ctx)
		if err != nil {
			if errors.Is(err, iwarp.ErrPeerDisconnected) {
				return nil // the client is done
			}
			return err
		}
		var adv iwarp.RemoteBuffer
		if err := adv.UnmarshalBinary(msg); err != nil {
			return fmt.Errorf("client advertisement: %w", err)
		}
		if int(adv.Len) > len(rdma) {
			return fmt.Errorf("client buffer of %d bytes is larger than -S %d", adv.Len, len(rdma))
		}
		if err := e.qp.Read(ctx, e.rdmaMR.SGE(0, int(adv.Len)), adv); err != nil {
			return fmt.Errorf("RDMA Read: %w", err)
		}
		if o.verbose {
			fmt.Fprintf(w, "server ping data: %s\n", cstring(rdma))
		}
		if err := e.send(ctx, iwarp.RemoteBuffer{}); err != nil {
			return err
		}
		if msg, err = e.recv(ctx); err != nil {
			return err
		}
		if err := adv.UnmarshalBinary(msg); err != nil {
			return fmt.Errorf("client advertisement: %w", err)
		}
		n := min(len(cstring(rdma))+1, len(rdma), int(adv.Len))
		if err := e.qp.Write(ctx, adv, e.rdmaMR.SGE(0, n)); err != nil {
			return fmt.Errorf("RDMA Write: %w", err)
		}
		if err := e.send(ctx, iwarp.RemoteBuffer{}); err != nil {
			return err
		}
	}
}
