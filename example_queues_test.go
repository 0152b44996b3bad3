package iwarp_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goiwarp/iwarp"
)

// The examples of completions and receives, and of private data: their
// server needs a ServeConfig of their own (an SRQ for its receives, a CQ
// of the example's, private data), which they give startServer, at the
// end of this file; their client is Dial. ExampleQP_PostRecv makes both
// ends by hand, on the verbs layer. The examples of one-sided operations
// are in example_test.go.

// ExampleRemoteBuffer_MarshalBinary advertises memory in a protocol of
// one's own: the server sends a RemoteBuffer's 16-byte encoding (rping's)
// as the private data of its MPA Reply, and the client decodes it from its
// QP's attributes and reads there. (ServeConfig.Memory and QP.PeerMemory
// do the same with a memory advertisement, which holds these encodings.)
func ExampleRemoteBuffer_MarshalBinary() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	shared, err := pd.RegisterMemory([]byte("advertised by hand"), iwarp.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	adv, err := shared.Remote().MarshalBinary()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("advertisement:", len(adv), "bytes")
	addr := startServer(ctx, &iwarp.ServeConfig{PD: pd, Conn: iwarp.ConnOptions{PrivateData: adv}})

	qp, err := iwarp.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	var remote iwarp.RemoteBuffer
	if err := remote.UnmarshalBinary(qp.Attributes().PeerPrivateData); err != nil {
		log.Fatal(err)
	}
	fmt.Println("decoded:", remote == shared.Remote(), "length", remote.Len)

	sink, err := qp.PD().RegisterMemory(make([]byte, remote.Len), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := qp.Read(ctx, remote, sink.SGE(0, sink.Len())); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read: %s\n", sink.Bytes())
	// Output:
	// advertisement: 16 bytes
	// decoded: true length 18
	// read: advertised by hand
}

// ExampleQP_PostSend posts a batch of signaled Writes in one call and
// collects their completions from the send CQ: Poll never blocks, and Wait
// waits while the CQ is empty. The CQ is the client's own
// (DialConfig.QP), on the Device the QP is made on (DialConfig.Device),
// and its capacity covers the depth of the send queue it serves.
func ExampleQP_PostSend() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	board, err := pd.RegisterMemory(make([]byte, 12), iwarp.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	addr := startServer(ctx, &iwarp.ServeConfig{Memory: []*iwarp.MR{board}})

	sendCQ, err := dev.NewCQ(4, nil)
	if err != nil {
		log.Fatal(err)
	}
	qp, err := iwarp.Dial(ctx, addr, &iwarp.DialConfig{Device: dev, QP: iwarp.QPConfig{SendCQ: sendCQ, SendQueueDepth: 4}})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	peer, err := qp.PeerMemory()
	if err != nil {
		log.Fatal(err)
	}

	src, err := qp.PD().RegisterMemory([]byte("onetwothree!"), 0)
	if err != nil {
		log.Fatal(err)
	}
	var batch []iwarp.SendWR
	for i := range 3 {
		dst, err := peer[0].Slice(uint32(4*i), 4)
		if err != nil {
			log.Fatal(err)
		}
		batch = append(batch, iwarp.SendWR{ID: uint64(i + 1), Op: iwarp.OpWrite, Flags: iwarp.Signaled,
			SGL: []iwarp.SGE{src.SGE(4*i, 4)}, Remote: dst})
	}
	if err := qp.PostSend(batch...); err != nil {
		log.Fatal(err)
	}

	wcs := make([]iwarp.Completion, 4)
	for done := 0; done < len(batch); {
		if err := sendCQ.Wait(ctx); err != nil {
			log.Fatal(err)
		}
		n := sendCQ.Poll(wcs)
		for _, c := range wcs[:n] {
			fmt.Println(c.Op, c.ID, c.Status, c.QPNum == qp.Num())
		}
		done += n
	}
	// Output:
	// Write 1 success true
	// Write 2 success true
	// Write 3 success true
}

// ExampleCQ_Arm waits for a solicited event through an EventChannel,
// which can gather the notifications of many CQs for one goroutine. A CQ
// armed with NotifySolicited is not woken by the completion of an ordinary
// message (Immediate Data 1 here) but by that of one sent Solicited
// (Immediate Data 2), and then finds both queued. Arming ignores the
// completions already queued: poll after arming.
func ExampleCQ_Arm() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	srq, err := pd.NewSRQ(&iwarp.SRQConfig{Depth: 4})
	if err != nil {
		log.Fatal(err)
	}
	if err := srq.PostRecv(iwarp.RecvWR{ID: 1}, iwarp.RecvWR{ID: 2}); err != nil {
		log.Fatal(err)
	}
	events := iwarp.NewEventChannel(1)
	recvCQ, err := dev.NewCQ(4, events)
	if err != nil {
		log.Fatal(err)
	}
	recvCQ.Arm(iwarp.NotifySolicited)
	addr := startServer(ctx, &iwarp.ServeConfig{PD: pd, QP: iwarp.QPConfig{SRQ: srq, RecvCQ: recvCQ}})

	qp, err := iwarp.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	if err := qp.ImmediateData(ctx, 1, 0); err != nil {
		log.Fatal(err)
	}
	if err := qp.ImmediateData(ctx, 2, iwarp.Solicited); err != nil {
		log.Fatal(err)
	}

	cq, err := events.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("woken by the receive CQ:", cq == recvCQ)
	wcs := make([]iwarp.Completion, 4)
	for _, c := range wcs[:cq.Poll(wcs)] {
		fmt.Printf("%v: immediate %d, solicited %v\n", c.Op, c.Immediate, c.Solicited)
	}
	// Output:
	// woken by the receive CQ: true
	// Recv: immediate 1, solicited false
	// Recv: immediate 2, solicited true
}

// ExampleQP_PostRecv posts a receive before the connection exists, as
// iWARP requires of a peer that may be sent to at once: a Send that finds
// no posted receive is fatal to the connection. That takes the verbs
// layer, the long path under Dial and Serve: a CQ and a QP made by hand
// (a CQ's capacity covers the depths of the queues attached to it), the
// connection accepted and made by hand, and the receive's completion,
// with the bytes it placed, polled from the server's CQ.
func ExampleQP_PostRecv() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}

	// The server: its QP and its receive, then a Listener.
	serverCQ, err := dev.NewCQ(4+4, nil)
	if err != nil {
		log.Fatal(err)
	}
	server, err := pd.NewQP(&iwarp.QPConfig{SendCQ: serverCQ, RecvCQ: serverCQ, SendQueueDepth: 4, RecvQueueDepth: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	inbox, err := pd.RegisterMemory(make([]byte, 16), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	if err := server.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{inbox.SGE(0, 16)}}); err != nil {
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

	// The client.
	clientCQ, err := dev.NewCQ(4+4, nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := pd.NewQP(&iwarp.QPConfig{SendCQ: clientCQ, RecvCQ: clientCQ, SendQueueDepth: 4, RecvQueueDepth: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if err := client.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
		log.Fatal(err)
	}
	if err := <-accepted; err != nil {
		log.Fatal(err)
	}
	msg, err := pd.RegisterMemory([]byte("hello, server"), 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Send(ctx, msg.SGE(0, msg.Len())); err != nil {
		log.Fatal(err)
	}

	c, err := serverCQ.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%v %d %v: %s\n", c.Op, c.ID, c.Status, inbox.Bytes()[:c.Len])
	// Output:
	// Recv 1 success: hello, server
}

// ExampleQP_WriteWithImmediate writes into the server's memory and tells
// it so: the 8 immediate bytes (RFC 7306) consume one of the server's
// receives, and its receive completion is reported only after the Write
// was placed, so the server may look at the written bytes once it has that
// completion (docs/semantics.md rule 2). The server's QPs take their
// receives from an SRQ, posted before any client connects; this one needs
// no buffer, as the value arrives in the completion.
func ExampleQP_WriteWithImmediate() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	inbox, err := pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	srq, err := pd.NewSRQ(&iwarp.SRQConfig{Depth: 4})
	if err != nil {
		log.Fatal(err)
	}
	if err := srq.PostRecv(iwarp.RecvWR{ID: 1}); err != nil {
		log.Fatal(err)
	}
	recvCQ, err := dev.NewCQ(4, nil) // the SRQ's depth
	if err != nil {
		log.Fatal(err)
	}
	addr := startServer(ctx, &iwarp.ServeConfig{Memory: []*iwarp.MR{inbox}, QP: iwarp.QPConfig{SRQ: srq, RecvCQ: recvCQ}})

	qp, err := iwarp.Dial(ctx, addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	fmt.Println("RFC 7306 agreed:", qp.Attributes().RFC7306)
	peer, err := qp.PeerMemory()
	if err != nil {
		log.Fatal(err)
	}
	frame, err := qp.PD().RegisterMemory([]byte("frame #1"), 0)
	if err != nil {
		log.Fatal(err)
	}
	// The immediate value tells the server how many bytes arrived.
	if err := qp.WriteWithImmediate(ctx, peer[0], uint64(frame.Len()), frame.SGE(0, frame.Len())); err != nil {
		log.Fatal(err)
	}

	c, err := recvCQ.Next(ctx)
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

// ExampleSRQ serves every connection from one pool of receives: a Send on
// any of the server's QPs takes the oldest receive posted to the shared
// receive queue, and its completion goes to the receive CQ of the QP it
// arrived on (here one CQ for all of them, which reserves the SRQ's depth
// once), with that QP's number.
func ExampleSRQ() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

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
	pool, err := pd.RegisterMemory(make([]byte, 4*16), iwarp.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 4 {
		if err := srq.PostRecv(iwarp.RecvWR{ID: uint64(100 + i), SGL: []iwarp.SGE{pool.SGE(16*i, 16)}}); err != nil {
			log.Fatal(err)
		}
	}
	recvCQ, err := dev.NewCQ(8, nil)
	if err != nil {
		log.Fatal(err)
	}
	addr := startServer(ctx, &iwarp.ServeConfig{PD: pd, QP: iwarp.QPConfig{SRQ: srq, RecvCQ: recvCQ}})

	var clients []*iwarp.QP
	for range 2 {
		qp, err := iwarp.Dial(ctx, addr, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer qp.Close()
		clients = append(clients, qp)
	}

	serverQPs := make(map[uint32]bool)
	for _, i := range []int{1, 0, 1} {
		msg, err := clients[i].PD().RegisterMemory(fmt.Appendf(nil, "from client %d", i), 0)
		if err != nil {
			log.Fatal(err)
		}
		if err := clients[i].Send(ctx, msg.SGE(0, msg.Len())); err != nil {
			log.Fatal(err)
		}
		c, err := recvCQ.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		serverQPs[c.QPNum] = true
		off := 16 * int(c.ID-100)
		fmt.Printf("receive %d: %s\n", c.ID, pool.Bytes()[off:off+c.Len])
	}
	fmt.Println("server QPs:", len(serverQPs), "- receives still posted:", srq.Posted())
	// Output:
	// receive 100: from client 1
	// receive 101: from client 0
	// receive 102: from client 1
	// server QPs: 2 - receives still posted: 1
}

// startServer stands for the server of the examples, in one process with
// its client for their sake: Listener.Serve with cfg on a loopback port,
// until ctx ends. It returns the address to Dial.
func startServer(ctx context.Context, cfg *iwarp.ServeConfig) string {
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		defer ln.Close()
		if err := ln.Serve(ctx, cfg); ctx.Err() == nil {
			log.Fatal(err)
		}
	}()
	return ln.Addr().String()
}
