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
// out-of-bounds Write; the server reports each connection with its canaries
// intact and stays up for the next.
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
		dev := iwarp.NewDevice(nil)
		pd, _ := dev.AllocPD()
		cq, _ := dev.NewCQ(64, nil)
		qp, _ := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 8, RecvQueueDepth: 8})
		if err := qp.Connect(ctx, "tcp", ln.Addr().String(), nil); err != nil {
			t.Fatal(err)
		}
		var remote iwarp.RemoteBuffer
		if err := remote.UnmarshalBinary(qp.Attributes().PeerPrivateData[:iwarp.RemoteBufferLen]); err != nil {
			t.Fatal(err)
		}
		src, _ := pd.RegisterMemory([]byte("served!!"), 0)
		if err := qp.Write(ctx, remote, src.SGE(0, 8)); err != nil {
			t.Fatal(err)
		}
		sink, _ := pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite)
		if err := qp.Read(ctx, sink.SGE(0, 8), remote); err != nil || string(sink.Bytes()) != "served!!" {
			t.Fatalf("read back %q %v", sink.Bytes(), err)
		}
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
}
