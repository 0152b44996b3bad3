package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLoggerRecordsTerminate: a Device with a Logger records a QP torn down
// by a Terminate as a warning naming the code and the peer.
func TestLoggerRecordsTerminate(t *testing.T) {
	var logs syncBuffer
	dev := iwarp.NewDevice(&iwarp.DeviceConfig{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	pd, _ := dev.AllocPD()
	cq, _ := dev.NewCQ(256, nil)
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	server := &endpoint{dev: dev, pd: pd, cq: cq, qp: qp}
	client := newEndpoint(t)
	connect(t, client, server, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// No receive posted: fatal at the server. The Send completes when
	// handed to TCP, or, if the peer's Terminate answering it is read
	// before the write is reported (a blocking write on the portable
	// path), with that Terminate.
	var te *iwarp.TerminateError
	if err := client.qp.Send(ctx); err != nil && !errors.As(err, &te) {
		t.Fatal(err)
	}
	<-qp.Done()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "torn down") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	for _, want := range []string{"level=DEBUG", "queue pair connected", "level=WARN", "QP fatal", "DDP/2/0x02", "peer=127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
