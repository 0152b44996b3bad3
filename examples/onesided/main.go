// Command onesided shows one-sided RDMA: a client reads and writes a
// server's memory, and looks keys up in the server's hash table, without
// the server's application taking part in any of it.
//
// The server registers two regions and accepts the client with
// Listener.Serve, which advertises both in the MPA private data
// (ServeConfig.Memory); the client connects with Dial and finds them with
// QP.PeerMemory:
//
//   - a shared buffer with remote read and write access, holding a greeting
//     the server wrote before registering it;
//   - a hash table of fixed-size entries (open addressing, linear probing),
//     filled before registration and exposed read-only; its length tells
//     the client the number of buckets.
//
// The client RDMA Reads the greeting, RDMA Writes its own data over it and
// Reads it back (a Read issued after Writes on the same connection is
// answered only after they were placed: docs/semantics.md rule 3), then
// looks keys up by RDMA Reading the key's bucket and comparing the key,
// moving to the next bucket on a collision, until the key or an empty
// bucket is found. Finally it Sends one message; the server's completion
// for it comes after the client's Writes were placed, so only then does the
// server look at the shared buffer (rule 2).
//
// Run it (both ends in one process, over loopback):
//
//	go run ./examples/onesided
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/goiwarp/iwarp"
)

// Layout of a hash table entry: key length, value length, key, value.
// A key length of 0 marks an empty bucket.
const (
	entrySize = 64
	maxKey    = 30
	maxValue  = 32
	keyOff    = 2
	valueOff  = keyOff + maxKey
)

const greeting = "hello from the server"

// run parses the command line and runs both ends over loopback.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("onesided", flag.ContinueOnError)
	keys := fs.Int("keys", 40, "keys stored in the server's table")
	buckets := fs.Int("buckets", 64, "buckets of the table (more than -keys, at most 65536)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keys < 0 {
		return badValue(fs, "keys", *keys, "must not be negative")
	}
	if *buckets <= *keys || *buckets > 1<<16 {
		return badValue(fs, "buckets", *buckets, "must be more than -keys (%d) and at most 65536", *keys)
	}
	return loopback(ctx, *keys, *buckets, stdout)
}

// buildTable returns a table of buckets entries holding key-i → value-i for
// i < keys.
func buildTable(keys, buckets int) ([]byte, error) {
	if keys >= buckets {
		return nil, errors.New("the table needs an empty bucket: keys must be fewer than buckets")
	}
	table := make([]byte, buckets*entrySize)
	for i := 0; i < keys; i++ {
		key, value := fmt.Sprintf("key-%d", i), fmt.Sprintf("value of key %d", i)
		b := bucket(key, buckets)
		for table[b*entrySize] != 0 { // linear probing
			b = (b + 1) % buckets
		}
		e := table[b*entrySize:][:entrySize]
		e[0], e[1] = byte(len(key)), byte(len(value))
		copy(e[keyOff:], key)
		copy(e[valueOff:], value)
	}
	return table, nil
}

// bucket is the home bucket of key.
func bucket(key string, buckets int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(buckets))
}

// loopback runs a server and a client in this process and prints what the
// client saw.
func loopback(ctx context.Context, keys, buckets int, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	table, err := buildTable(keys, buckets)
	if err != nil {
		return err
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	seen := make(chan []byte, 1)
	errc := make(chan error, 1)
	go func() {
		got, err := serve(ctx, ln, table)
		if err != nil {
			cancel()
		}
		seen <- got
		errc <- err
	}()
	written, err := client(ctx, ln.Addr().String(), keys, stdout)
	if err != nil {
		cancel() // unblock the server
	}
	got, serr := <-seen, <-errc
	if err := errors.Join(err, serr); err != nil {
		return err
	}
	if !bytes.Equal(got, written) {
		return errors.New("the server does not see what the client wrote")
	}
	fmt.Fprintf(stdout, "server: after the client's Send completed, its shared buffer holds the client's %d bytes\n", len(got))
	return nil
}

// serve exposes the shared buffer and the table to one client and returns
// the shared buffer's contents once the client's message arrived.
func serve(ctx context.Context, ln *iwarp.Listener, table []byte) ([]byte, error) {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	// Memory a peer reads is written before it is registered.
	shared := make([]byte, 4096)
	copy(shared, greeting)
	sharedMR, err := pd.RegisterMemory(shared, iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	defer sharedMR.Close()
	tableMR, err := pd.RegisterMemory(table, iwarp.AccessRemoteRead)
	if err != nil {
		return nil, err
	}
	defer tableMR.Close()
	// The client's closing message: the number of bytes it wrote.
	msgMR, err := pd.RegisterMemory(make([]byte, 4), iwarp.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	defer msgMR.Close()

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		served bool // the Handle ran
		got    []byte
		herr   error
	)
	err = ln.Serve(sctx, &iwarp.ServeConfig{
		Memory: []*iwarp.MR{sharedMR, tableMR},
		Prepare: func(qp *iwarp.QP) error {
			return qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{msgMR.SGE(0, 4)}})
		},
		Handle: func(ctx context.Context, qp *iwarp.QP) {
			got, herr = awaitClient(ctx, qp, shared, msgMR.Bytes())
			served = true
			stop() // one client is the whole run
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if !served {
		return nil, err
	}
	return got, herr
}

// awaitClient waits for the client's message (msg, the number of bytes it
// wrote) and its disconnection, and returns what it wrote into shared.
func awaitClient(ctx context.Context, qp *iwarp.QP, shared, msg []byte) ([]byte, error) {
	c, err := qp.RecvCQ().Next(ctx)
	if err != nil {
		return nil, err
	}
	if c.Status != iwarp.StatusSuccess || c.Len != 4 {
		return nil, fmt.Errorf("receive: %v, %d bytes: %v", c.Status, c.Len, c.Err)
	}
	n := int(binary.BigEndian.Uint32(msg))
	if n > len(shared) {
		return nil, fmt.Errorf("the client claims to have written %d bytes", n)
	}
	// The client's Writes were placed before this completion: shared may
	// be read now.
	got := bytes.Clone(shared[:n])
	select {
	case <-qp.Done():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := qp.Err(); !errors.Is(err, iwarp.ErrPeerDisconnected) {
		return nil, err
	}
	return got, nil
}

// kvClient looks keys up in a remote table by RDMA Read.
type kvClient struct {
	qp      *iwarp.QP
	table   iwarp.RemoteBuffer
	buckets int
	entry   *iwarp.MR // the sink of the Reads
}

// get returns key's value and the number of RDMA Reads it took.
func (c *kvClient) get(ctx context.Context, key string) (value string, found bool, reads int, err error) {
	b := bucket(key, c.buckets)
	for reads < c.buckets {
		remote, err := c.table.Slice(uint32(b*entrySize), entrySize)
		if err != nil {
			return "", false, reads, err
		}
		if err := c.qp.Read(ctx, remote, c.entry.SGE(0, entrySize)); err != nil {
			return "", false, reads, err
		}
		reads++
		e := c.entry.Bytes()
		klen, vlen := int(e[0]), int(e[1])
		switch {
		case klen == 0:
			return "", false, reads, nil // an empty bucket ends the probe
		case klen > maxKey || vlen > maxValue:
			return "", false, reads, fmt.Errorf("bucket %d is corrupt", b)
		case string(e[keyOff:keyOff+klen]) == key:
			return string(e[valueOff : valueOff+vlen]), true, reads, nil
		}
		b = (b + 1) % c.buckets
	}
	return "", false, reads, nil
}

// client runs the client's side and returns what it wrote into the
// server's shared buffer.
func client(ctx context.Context, addr string, keys int, stdout io.Writer) ([]byte, error) {
	qp, err := iwarp.Dial(ctx, addr, nil)
	if err != nil {
		return nil, err
	}
	defer qp.Close()
	mem, err := qp.PeerMemory()
	if err != nil {
		return nil, err
	}
	if len(mem) != 2 || mem[1].Len == 0 || mem[1].Len%entrySize != 0 {
		return nil, fmt.Errorf("the server advertised %v, want a shared buffer and a table of %d-byte buckets", mem, entrySize)
	}
	shared, table := mem[0], mem[1]
	kv := &kvClient{qp: qp, table: table, buckets: int(table.Len / entrySize)}
	pd := qp.PD()

	// Read the server's greeting.
	local := make([]byte, 1024)
	localMR, err := pd.RegisterMemory(local, iwarp.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	if err := qp.Read(ctx, shared, localMR.SGE(0, len(greeting))); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "client: RDMA Read of the shared buffer: %q\n", local[:len(greeting)])
	if string(local[:len(greeting)]) != greeting {
		return nil, errors.New("the greeting did not come back")
	}

	// Write over it, then Read it back into another buffer.
	for i := range local {
		local[i] = byte(i*7 + 3)
	}
	if err := qp.Write(ctx, shared, localMR.SGE(0, len(local))); err != nil {
		return nil, err
	}
	back := make([]byte, len(local))
	backMR, err := pd.RegisterMemory(back, iwarp.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	if err := qp.Read(ctx, shared, backMR.SGE(0, len(back))); err != nil {
		return nil, err
	}
	if !bytes.Equal(back, local) {
		return nil, errors.New("the Read after the Write did not return what was written")
	}
	fmt.Fprintf(stdout, "client: RDMA Wrote %d bytes and Read them back intact\n", len(local))

	// Key-value lookups, hits and misses.
	kv.entry, err = pd.RegisterMemory(make([]byte, entrySize), iwarp.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	reads := 0
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("key-%d", i)
		v, ok, n, err := kv.get(ctx, key)
		if err != nil {
			return nil, err
		}
		if want := fmt.Sprintf("value of key %d", i); !ok || v != want {
			return nil, fmt.Errorf("lookup %s: %q, %v; want %q", key, v, ok, want)
		}
		reads += n
	}
	fmt.Fprintf(stdout, "client: found all %d keys in %d RDMA Reads of %d-byte buckets\n", keys, reads, entrySize)
	for _, key := range []string{"key-1000", "nothing", "key--1"} {
		v, ok, n, err := kv.get(ctx, key)
		if err != nil {
			return nil, err
		}
		if ok {
			return nil, fmt.Errorf("lookup %s found %q", key, v)
		}
		fmt.Fprintf(stdout, "client: %q is not in the table (%d RDMA Reads)\n", key, n)
	}

	// Tell the server how much it wrote; the server's receive completion
	// comes after the Write was placed.
	msgMR, err := pd.RegisterMemory(binary.BigEndian.AppendUint32(nil, uint32(len(local))), 0)
	if err != nil {
		return nil, err
	}
	if err := qp.Send(ctx, msgMR.SGE(0, 4)); err != nil {
		return nil, err
	}
	return local, qp.Disconnect(ctx)
}
