package host

import (
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// manualTicker is a keep-alive ticker the test drives.
type manualTicker struct {
	c      chan time.Time
	period chan time.Duration
}

func newManualTicker() *manualTicker {
	return &manualTicker{c: make(chan time.Time), period: make(chan time.Duration, 1)}
}

func (m *manualTicker) new(d time.Duration) (<-chan time.Time, func()) {
	m.period <- d
	return m.c, func() {}
}

func TestKeepAlive(t *testing.T) {
	ft := newFakeTarget(t, 64)
	mt := newManualTicker()
	cfg := &Config{IOQueues: 1, KATO: 3 * time.Second, ticker: mt.new}
	c := connectFake(t, ft, cfg)
	if d := <-mt.period; d != 1500*time.Millisecond {
		t.Fatalf("keep-alive every %v, want KATO/2", d)
	}
	for range 3 {
		mt.c <- time.Time{}
		<-ft.kas
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	// A keep-alive that fails fails the controller.
	ft.setHook(func(qid uint16, cmd nvme.Command) fault {
		if qid == 0 && cmd.Opcode == nvme.AdminKeepAlive {
			return fault{status: nvme.StatusInvalidField}
		}
		return fault{}
	})
	mt.c <- time.Time{}
	<-c.Done()
	if err := c.Err(); !errors.Is(err, ErrFailed) {
		t.Fatalf("after a failed keep-alive: %v", err)
	}
}

func TestKeepAliveOff(t *testing.T) {
	ft := newFakeTarget(t, 64)
	mt := newManualTicker()
	c := connectFake(t, ft, &Config{IOQueues: 1, KATO: -1, ticker: mt.new})
	select {
	case d := <-mt.period:
		t.Fatalf("keep-alive every %v with KATO off", d)
	default:
	}
	if err := c.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}
