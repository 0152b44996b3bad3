package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// TestServe: a client learns the region from the private data, Writes,
// Reads back, runs a FetchAdd, then provokes a Terminate with an
// out-of-bounds Write; the server reports each connection (its Terminate
// once) with its canaries intact and stays up for the next.
func TestServe(t *testing.T) {
	s, err := newServer(4096, 64, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer // written under s.mu, read after the server goroutine ended
	s.out = &out
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	served := make(chan struct{})
	go func() {
		for i := 0; i < 2; i++ {
			req, err := ln.Accept(ctx)
			if err != nil {
				break
			}
			s.serveOne(ctx, req)
		}
		close(served)
	}()
	for round := 0; round < 2; round++ {
		qp, remote, src := dialServeWriteRead(ctx, t, ln.Addr().String(), "served!!")
		if _, err := qp.FetchAdd(ctx, remote, 1); err != nil {
			t.Fatal(err)
		}
		// Out of bounds by one byte: the server must refuse it.
		edge, _ := remote.Slice(remote.Len-4, 4)
		edge.TO += 1
		_ = qp.Write(ctx, edge, src.SGE(0, 4))
		<-qp.Done()
		var te *iwarp.TerminateError
		if !errors.As(qp.Err(), &te) || te.Code != iwarp.TermDDPBaseBounds {
			t.Fatalf("round %d: %v", round, qp.Err())
		}
	}
	<-served
	report := out.String()
	if strings.Count(report, "canaries intact") != 2 || strings.Contains(report, "OVERWRITTEN") {
		t.Fatalf("server report:\n%s", report)
	}
	// Each connection's line names its Terminate once.
	for _, line := range strings.Split(strings.TrimSpace(report), "\n") {
		if n := strings.Count(line, "DDP/1/0x01"); n != 1 {
			t.Errorf("the Terminate code appears %d times in %q", n, line)
		}
	}
}

// dialServeWriteRead connects a client to the serve at addr, learns the
// region from the MPA Reply's private data, Writes data at its start and
// Reads it back. It returns the client's QP, the region and the source.
func dialServeWriteRead(ctx context.Context, t *testing.T, addr, data string) (*iwarp.QP, iwarp.RemoteBuffer, *iwarp.MR) {
	t.Helper()
	dev := iwarp.NewDevice(nil)
	pd, _ := dev.AllocPD()
	cq, _ := dev.NewCQ(64, nil)
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qp.Close() })
	if err := qp.Connect(ctx, "tcp", addr, nil); err != nil {
		t.Fatal(err)
	}
	var remote iwarp.RemoteBuffer
	if err := remote.UnmarshalBinary(qp.Attributes().PeerPrivateData[:iwarp.RemoteBufferLen]); err != nil {
		t.Fatal(err)
	}
	src, _ := pd.RegisterMemory([]byte(data), 0)
	if err := qp.Write(ctx, remote, src.SGE(0, len(data))); err != nil {
		t.Fatal(err)
	}
	sink, _ := pd.RegisterMemory(make([]byte, len(data)), iwarp.AccessLocalWrite)
	if err := qp.Read(ctx, remote, sink.SGE(0, len(data))); err != nil || string(sink.Bytes()) != data {
		t.Fatalf("read back %q, %v", sink.Bytes(), err)
	}
	return qp, remote, src
}
