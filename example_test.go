package iwarp_test

import (
	"context"
	"fmt"
	"log"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

// Each example runs both ends of a connection in one process over loopback:
// a server QP accepted through a Listener and a client QP that connects to
// it. In a real program they are in different processes or on different
// machines, and the server advertises its memory (RemoteBuffer) in its
// application protocol.

// Example connects two queue pairs, writes into the server's registered
// memory with a one-sided RDMA Write and reads it back with an RDMA Read.
// The server learns nothing of either operation: one-sided operations
// produce no completion at the target.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	newQP := func() *iwarp.QP {
		cq, err := dev.NewCQ(32, nil)
		if err != nil {
			log.Fatal(err)
		}
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16})
		if err != nil {
			log.Fatal(err)
		}
		return qp
	}
	client, server := newQP(), newQP()
	defer client.Close()
	defer server.Close()

	// The server's memory that peers may write and read: 64 bytes under
	// an STag, with tagged offsets 0-63.
	target, err := pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, nil)
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}
	fmt.Println("client:", client.State())

	// Write from a registered source (local read needs no access right),
	// then Read into a sink the RNIC may write (AccessLocalWrite). The Read
	// is answered only after the Write was placed (RFC 5040 §5.5).
	msg := []byte("hello, iWARP")
	src, err := pd.RegisterMemory(msg, 0)
	if err != nil {
		log.Fatal(err)
	}
	sink, err := pd.RegisterMemory(make([]byte, len(msg)), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Write(ctx, target.Remote(), src.SGE(0, len(msg))); err != nil {
		log.Fatal(err)
	}
	if err := client.Read(ctx, target.Remote(), sink.SGE(0, len(msg))); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read back: %s\n", sink.Bytes())
	// Output:
	// client: RTS
	// read back: hello, iWARP
}

// ExampleQP_Read reads part of the peer's memory. The bytes a peer reads
// are written before the memory is registered (docs/semantics.md rule 2).
func ExampleQP_Read() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	newQP := func() *iwarp.QP {
		cq, err := dev.NewCQ(32, nil)
		if err != nil {
			log.Fatal(err)
		}
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16})
		if err != nil {
			log.Fatal(err)
		}
		return qp
	}
	client, server := newQP(), newQP()
	defer client.Close()
	defer server.Close()

	table, err := pd.RegisterMemory([]byte("key1=alpha;key2=bravo;key3=charlie"), iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, nil)
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}

	// Bytes 11-21 of the server's region ("key2=bravo"): the RemoteBuffer's
	// TO is an offset into the region, not a virtual address.
	entry, err := table.RemoteSlice(11, 10)
	if err != nil {
		log.Fatal(err)
	}
	sink, err := pd.RegisterMemory(make([]byte, 10), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Read(ctx, entry, sink.SGE(0, 10)); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("TO %d: %s\n", entry.TO, sink.Bytes())
	// Output:
	// TO 11: key2=bravo
}

// ExampleQP_FetchAdd adds to a counter in the peer's memory with the RFC
// 7306 Atomic FetchAdd, plain and masked. Remote atomics need an 8-byte
// aligned buffer; the owner reads the counter with MR.AtomicLoad, which is
// atomic with respect to the remote operations.
func ExampleQP_FetchAdd() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	newQP := func() *iwarp.QP {
		cq, err := dev.NewCQ(32, nil)
		if err != nil {
			log.Fatal(err)
		}
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16})
		if err != nil {
			log.Fatal(err)
		}
		return qp
	}
	client, server := newQP(), newQP()
	defer client.Close()
	defer server.Close()

	// Two 64-bit words, allocated as words so that they are aligned.
	words := []uint64{40, 0xFFFFFFFF}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 16)
	counters, err := pd.RegisterMemory(buf, iwarp.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, nil)
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}

	first, err := counters.RemoteSlice(0, 8)
	if err != nil {
		log.Fatal(err)
	}
	old, err := client.FetchAdd(ctx, first, 2)
	if err != nil {
		log.Fatal(err)
	}
	now, err := counters.AtomicLoad(0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("FetchAdd returned", old, "- counter is now", now)

	// The second word holds two 32-bit counters: the mask bits mark the
	// top bit of each field, and no carry crosses from one to the other.
	second, err := counters.RemoteSlice(8, 8)
	if err != nil {
		log.Fatal(err)
	}
	old, err = client.FetchAddMasked(ctx, second, 1<<32|1, 1<<63|1<<31)
	if err != nil {
		log.Fatal(err)
	}
	now, err = counters.AtomicLoad(8)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("masked: 0x%016x -> 0x%016x\n", old, now)
	// Output:
	// FetchAdd returned 40 - counter is now 42
	// masked: 0x00000000ffffffff -> 0x0000000100000000
}

// ExampleQP_CompareSwap takes a lock in the peer's memory with the RFC 7306
// Atomic CmpSwap: the swap happened if and only if the returned original
// value equals compare.
func ExampleQP_CompareSwap() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	newQP := func() *iwarp.QP {
		cq, err := dev.NewCQ(32, nil)
		if err != nil {
			log.Fatal(err)
		}
		qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 16, RecvQueueDepth: 16})
		if err != nil {
			log.Fatal(err)
		}
		return qp
	}
	client, server := newQP(), newQP()
	defer client.Close()
	defer server.Close()

	words := make([]uint64, 1) // 0: unlocked
	lock, err := pd.RegisterMemory(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8), iwarp.AccessRemoteAtomic)
	if err != nil {
		log.Fatal(err)
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, nil)
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}

	for _, owner := range []uint64{7, 9} {
		old, err := client.CompareSwap(ctx, lock.Remote(), 0, owner)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("owner %d: found %d, acquired %v\n", owner, old, old == 0)
	}
	// Release: back to 0 only if owner 7 still holds it.
	if _, err := client.CompareSwap(ctx, lock.Remote(), 7, 0); err != nil {
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

// ExampleQP_WriteWithImmediate writes into the peer's memory and tells it
// so: the 8 immediate bytes consume one of the peer's posted receives, and
// its receive completion is reported only after the Write was placed, so
// the peer may read the written bytes once it has that completion.
func ExampleQP_WriteWithImmediate() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	cq, err := dev.NewCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	serverCQ, err := dev.NewCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	server, err := pd.NewQP(&iwarp.QPConfig{SendCQ: serverCQ, RecvCQ: serverCQ, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()

	inbox, err := pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	// A receive for the Immediate Data, posted before the peer may send: on
	// iWARP a message that finds no receive is fatal. It needs no buffer:
	// the value arrives in the completion.
	if err := server.PostRecv(iwarp.RecvWR{ID: 1}); err != nil {
		log.Fatal(err)
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, nil)
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}
	fmt.Println("RFC 7306 agreed:", client.Attributes().RFC7306)

	msg := []byte("frame #1")
	src, err := pd.RegisterMemory(msg, 0)
	if err != nil {
		log.Fatal(err)
	}
	// The immediate value tells the server how many bytes arrived.
	if err := client.WriteWithImmediate(ctx, inbox.Remote(), uint64(len(msg)), src.SGE(0, len(msg))); err != nil {
		log.Fatal(err)
	}

	c, err := serverCQ.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Op, c.ID, c.Status, c.HasImmediate, c.Immediate)
	fmt.Printf("inbox: %s\n", inbox.Bytes()[:c.Immediate])
	// Output:
	// RFC 7306 agreed: true
	// Recv 1 success true 8
	// inbox: frame #1
}

// ExampleCQ_Poll posts several Sends at once with PostSend and collects
// their completions with Poll, which never blocks, waiting with Wait when
// the CQ is empty. Each side uses its own CQ.
func ExampleCQ_Poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	// A CQ's capacity must cover the depths of the queues attached to it:
	// 8 send + 8 receive here.
	cq, err := dev.NewCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	serverCQ, err := dev.NewCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	server, err := pd.NewQP(&iwarp.QPConfig{SendCQ: serverCQ, RecvCQ: serverCQ, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()

	// One receive per Send, posted before connecting.
	recvBuf, err := pd.RegisterMemory(make([]byte, 3*16), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if err := server.PostRecv(iwarp.RecvWR{ID: uint64(100 + i), SGL: []iwarp.SGE{recvBuf.SGE(16*i, 16)}}); err != nil {
			log.Fatal(err)
		}
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, nil)
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}

	payload, err := pd.RegisterMemory([]byte("onetwothree"), 0)
	if err != nil {
		log.Fatal(err)
	}
	err = client.PostSend(
		iwarp.SendWR{ID: 1, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{payload.SGE(0, 3)}},
		iwarp.SendWR{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{payload.SGE(3, 3)}},
		iwarp.SendWR{ID: 3, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{payload.SGE(6, 5)}},
	)
	if err != nil {
		log.Fatal(err)
	}

	// poll collects n completions of one CQ, in the order they complete.
	poll := func(cq *iwarp.CQ, n int) []iwarp.Completion {
		var got []iwarp.Completion
		wcs := make([]iwarp.Completion, 4)
		for len(got) < n {
			if err := cq.Wait(ctx); err != nil {
				log.Fatal(err)
			}
			k := cq.Poll(wcs)
			got = append(got, wcs[:k]...)
		}
		return got
	}
	for _, c := range poll(cq, 3) {
		fmt.Println("client:", c.Op, c.ID, c.Status)
	}
	for _, c := range poll(serverCQ, 3) {
		off := 16 * int(c.ID-100)
		fmt.Printf("server: %v %d %v %q\n", c.Op, c.ID, c.Status, recvBuf.Bytes()[off:off+c.Len])
	}
	// Output:
	// client: Send 1 success
	// client: Send 2 success
	// client: Send 3 success
	// server: Recv 100 success "one"
	// server: Recv 101 success "two"
	// server: Recv 102 success "three"
}

// ExampleRemoteBuffer_MarshalBinary advertises registered memory to the
// peer: the server sends its RemoteBuffer's 16-byte encoding as the private
// data of its MPA Reply, and the client decodes it and writes there. The
// client then Sends a message: the server may look at the written bytes
// once that later message's receive has completed (docs/semantics.md
// rule 2).
func ExampleRemoteBuffer_MarshalBinary() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	cq, err := dev.NewCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	serverCQ, err := dev.NewCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	server, err := pd.NewQP(&iwarp.QPConfig{SendCQ: serverCQ, RecvCQ: serverCQ, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()

	shared, err := pd.RegisterMemory(make([]byte, 32), iwarp.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	adv, err := shared.Remote().MarshalBinary()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("advertisement:", len(adv), "bytes")
	if err := server.PostRecv(iwarp.RecvWR{ID: 1}); err != nil { // for the client's "done"
		log.Fatal(err)
	}

	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, server, &iwarp.ConnOptions{PrivateData: adv})
	}()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}

	var remote iwarp.RemoteBuffer
	if err := remote.UnmarshalBinary(client.Attributes().PeerPrivateData); err != nil {
		log.Fatal(err)
	}
	fmt.Println("decoded:", remote == shared.Remote(), "length", remote.Len)

	src, err := pd.RegisterMemory([]byte("written by the client"), 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Write(ctx, remote, src.SGE(0, src.Len())); err != nil {
		log.Fatal(err)
	}
	if err := client.Send(ctx); err != nil { // a zero-length Send: "done"
		log.Fatal(err)
	}
	if _, err := serverCQ.Next(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("server sees: %s\n", shared.Bytes()[:src.Len()])
	// Output:
	// advertisement: 16 bytes
	// decoded: true length 32
	// server sees: written by the client
}

// ExamplePD_NewSRQ serves two connections from one shared receive queue: a
// Send on either QP takes the oldest receive posted to the SRQ, and its
// completion goes to the receive CQ of the QP it arrived on.
func ExamplePD_NewSRQ() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	srq, err := pd.NewSRQ(&iwarp.SRQConfig{Depth: 8})
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pd.RegisterMemory(make([]byte, 8*16), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 4 {
		if err := srq.PostRecv(iwarp.RecvWR{ID: uint64(100 + i), SGL: []iwarp.SGE{pool.SGE(16*i, 16)}}); err != nil {
			log.Fatal(err)
		}
	}

	// The server's CQ reserves the SRQ's depth once, plus each QP's send
	// queue depth.
	serverCQ, err := dev.NewCQ(8+2*4, nil)
	if err != nil {
		log.Fatal(err)
	}
	clientCQ, err := dev.NewCQ(2*(4+4), nil)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	var clients, servers []*iwarp.QP
	for range 2 {
		server, err := pd.NewQP(&iwarp.QPConfig{SendCQ: serverCQ, RecvCQ: serverCQ, SRQ: srq, SendQueueDepth: 4})
		if err != nil {
			log.Fatal(err)
		}
		defer server.Close()
		client, err := pd.NewQP(&iwarp.QPConfig{SendCQ: clientCQ, RecvCQ: clientCQ, SendQueueDepth: 4, RecvQueueDepth: 4})
		if err != nil {
			log.Fatal(err)
		}
		defer client.Close()
		accepted := make(chan error, 1)
		go func() {
			req, err := ln.Accept(ctx)
			if err != nil {
				accepted <- err
				return
			}
			accepted <- req.Accept(ctx, server, nil)
		}()
		if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
			log.Fatal(err)
		}
		if err := <-accepted; err != nil {
			log.Fatal(err)
		}
		clients, servers = append(clients, client), append(servers, server)
	}

	for _, i := range []int{1, 0, 1} {
		msg, err := pd.RegisterMemory(fmt.Appendf(nil, "from client %d", i), 0)
		if err != nil {
			log.Fatal(err)
		}
		if err := clients[i].Send(ctx, msg.SGE(0, msg.Len())); err != nil {
			log.Fatal(err)
		}
		c, err := serverCQ.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		on := 0
		if c.QPNum == servers[1].Num() {
			on = 1
		}
		off := 16 * int(c.ID-100)
		fmt.Printf("receive %d on server QP %d: %s\n", c.ID, on, pool.Bytes()[off:off+c.Len])
	}
	fmt.Println("still posted:", srq.Posted())
	// Output:
	// receive 100 on server QP 1: from client 1
	// receive 101 on server QP 0: from client 0
	// receive 102 on server QP 1: from client 1
	// still posted: 1
}
