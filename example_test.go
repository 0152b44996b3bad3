package iwarp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/goiwarp/iwarp"
)

// The examples of one-sided operations: a client reads, writes and updates
// the registered memory of a server, which learns nothing of it (one-sided
// operations produce no completion at the target). Each example registers
// the server's memory; dialServer, at the end of this file, starts a
// server that advertises it and dials it, both in one process for the
// examples' sake. The examples of completions, receives and private data
// are in example_queues_test.go.

// Example writes into the memory a server advertised, and reads it back.
// The server registered the memory with remote write and read access; the
// client writes from a registered source (local read needs no access
// right) and reads into a sink the RNIC may write (AccessLocalWrite). The
// Read is answered only after the Write was placed (RFC 5040 §5.5).
func Example() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	buf, err := pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	qp, peer := dialServer(ctx, buf)
	defer qp.Close()
	fmt.Println("client:", qp.State())

	msg := []byte("hello, iWARP")
	src, err := qp.PD().RegisterMemory(msg, 0)
	if err != nil {
		log.Fatal(err)
	}
	sink, err := qp.PD().RegisterMemory(make([]byte, len(msg)), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.Write(ctx, peer, src.SGE(0, len(msg))); err != nil {
		log.Fatal(err)
	}
	if err := qp.Read(ctx, peer, sink.SGE(0, len(msg))); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read back: %s\n", sink.Bytes())
	// Output:
	// client: RTS
	// read back: hello, iWARP
}

// ExampleQP_Write gathers two registered buffers into one Write, placed
// contiguously at offset 8 of the peer's memory. Write returns once the
// bytes were handed to TCP, not once the peer placed them; a Read posted
// after it is answered only after they were (docs/semantics.md rule 3),
// so reading them back proves it.
func ExampleQP_Write() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	page, err := pd.RegisterMemory(make([]byte, 32), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	qp, peer := dialServer(ctx, page)
	defer qp.Close()

	header, err := qp.PD().RegisterMemory([]byte("hdr:"), 0)
	if err != nil {
		log.Fatal(err)
	}
	body, err := qp.PD().RegisterMemory([]byte("payload"), 0)
	if err != nil {
		log.Fatal(err)
	}
	dst, err := peer.Slice(8, 11)
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.Write(ctx, dst, header.SGE(0, 4), body.SGE(0, 7)); err != nil {
		log.Fatal(err)
	}

	check, err := qp.PD().RegisterMemory(make([]byte, 11), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.Read(ctx, dst, check.SGE(0, 11)); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("at TO %d: %s\n", dst.TO, check.Bytes())
	// Output:
	// at TO 8: hdr:payload
}

// ExampleQP_Read reads one entry of a table the server advertised. A
// RemoteBuffer's TO is an offset into the region, not a virtual address:
// Slice names bytes 11 to 20. The bytes a peer reads are written before
// the memory is registered (docs/semantics.md rule 2).
func ExampleQP_Read() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	table, err := pd.RegisterMemory([]byte("key1=alpha;key2=bravo;key3=charlie"), iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	qp, peer := dialServer(ctx, table)
	defer qp.Close()

	entry, err := peer.Slice(11, 10)
	if err != nil {
		log.Fatal(err)
	}
	sink, err := qp.PD().RegisterMemory(make([]byte, 10), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.Read(ctx, entry, sink.SGE(0, 10)); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("TO %d: %s\n", entry.TO, sink.Bytes())
	// Output:
	// TO 11: key2=bravo
}

// ExampleMR_Rekey revokes what a peer was given: Rekey gives the region a
// new STag, and once it returns nothing moves through the old one any
// more. The client's next Read with the old RemoteBuffer is refused by the
// server, which ends the connection with a Terminate.
func ExampleMR_Rekey() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	doc, err := pd.RegisterMemory([]byte("version 1"), iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	qp, peer := dialServer(ctx, doc)
	defer qp.Close()
	sink, err := qp.PD().RegisterMemory(make([]byte, peer.Len), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.Read(ctx, peer, sink.SGE(0, sink.Len())); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read: %s\n", sink.Bytes())

	// The server revokes the client's access.
	old := doc.STag()
	stag, err := doc.Rekey(ctx, iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("new STag:", stag != old && stag == doc.STag())

	err = qp.Read(ctx, peer, sink.SGE(0, sink.Len()))
	var wrErr *iwarp.WRError
	if errors.As(err, &wrErr) {
		fmt.Println("read with the old STag:", wrErr.Status)
	}
	<-qp.Done()
	fmt.Println("connection terminated:", errors.Is(qp.Err(), iwarp.ErrTerminated))
	// Output:
	// read: version 1
	// new STag: true
	// read with the old STag: remote access error
	// connection terminated: true
}

// ExampleQP_FetchAdd hands out tickets from a counter in the server's
// memory: the RFC 7306 Atomic FetchAdd returns the value it found, so no
// two clients get the same one. The owner reads the counter with
// MR.AtomicLoad, atomic with respect to the remote operations.
func ExampleQP_FetchAdd() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	counter, _, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}
	qp, peer := dialServer(ctx, counter)
	defer qp.Close()

	for range 3 {
		ticket, err := qp.FetchAdd(ctx, peer, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("ticket", ticket)
	}
	next, err := counter.AtomicLoad(0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next ticket:", next)
	// Output:
	// ticket 0
	// ticket 1
	// ticket 2
	// next ticket: 3
}

// ExampleQP_FetchAddMasked adds to two 32-bit counters held in one 64-bit
// word: a set bit of the mask marks the top bit of a field, and no carry
// crosses it, so the low counter wraps without touching the high one.
func ExampleQP_FetchAddMasked() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	pair, words, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}
	atomic.StoreUint64(&words[0], 0x00000000_FFFFFFFF) // high 0, low about to wrap
	qp, peer := dialServer(ctx, pair)
	defer qp.Close()

	old, err := qp.FetchAddMasked(ctx, peer, 1<<32|1, 1<<63|1<<31)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("0x%016x -> 0x%016x\n", old, atomic.LoadUint64(&words[0]))
	// Output:
	// 0x00000000ffffffff -> 0x0000000100000000
}

// ExampleQP_CompareSwap takes a lock in the server's memory with the RFC
// 7306 Atomic CmpSwap: the swap happened if and only if the value it
// returns equals compare.
func ExampleQP_CompareSwap() {
	ctx := context.Background()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	lock, _, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic) // 0: unlocked
	if err != nil {
		log.Fatal(err)
	}
	qp, peer := dialServer(ctx, lock)
	defer qp.Close()

	for _, owner := range []uint64{7, 9} {
		old, err := qp.CompareSwap(ctx, peer, 0, owner)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("owner %d: found %d, acquired %v\n", owner, old, old == 0)
	}
	// Release: back to 0 only if owner 7 still holds it.
	if _, err := qp.CompareSwap(ctx, peer, 7, 0); err != nil {
		log.Fatal(err)
	}
	v, err := lock.AtomicLoad(0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lock word:", v)
	// Output:
	// owner 7: found 0, acquired true
	// owner 9: found 7, acquired false
	// lock word: 0
}

// ExamplePD_RegisterWords shows that the words and the region are one
// memory: word i is at byte offset 8*i of the MR (what a peer names with
// MR.RemoteSlice(8*i, 8)), and its owner updates it atomically, through the
// MR or with sync/atomic on the word, as peers may update it at any moment.
func ExamplePD_RegisterWords() {
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	mr, words, err := pd.RegisterWords(3, iwarp.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}

	if _, err := mr.AtomicAdd(8, 5); err != nil { // word 1
		log.Fatal(err)
	}
	atomic.AddUint64(&words[2], 7)
	for i := range words {
		v, err := mr.AtomicLoad(8 * i)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("word %d = %d (%d)\n", i, v, atomic.LoadUint64(&words[i]))
	}
	second, err := mr.RemoteSlice(8, 8)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("region of %d bytes; word 1 for a peer: TO %d, Len %d\n", mr.Len(), second.TO, second.Len)
	// Output:
	// word 0 = 0 (0)
	// word 1 = 5 (5)
	// word 2 = 7 (7)
	// region of 24 bytes; word 1 for a peer: TO 8, Len 8
}

// dialServer stands for a server and a client connected to it, in one
// process for the examples' sake: the server (startServer, in
// example_queues_test.go, until the client's QP is done) advertises memory
// to each client it accepts; the client is Dial, and the RemoteBuffer
// dialServer returns is the advertised memory (QP.PeerMemory).
func dialServer(ctx context.Context, memory *iwarp.MR) (*iwarp.QP, iwarp.RemoteBuffer) {
	serving, stop := context.WithCancel(ctx)
	addr := startServer(serving, &iwarp.ServeConfig{Memory: []*iwarp.MR{memory}})
	qp, err := iwarp.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		<-qp.Done()
		stop()
	}()
	peer, err := qp.PeerMemory()
	if err != nil {
		log.Fatal(err)
	}
	return qp, peer[0]
}
