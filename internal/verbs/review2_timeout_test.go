package verbs

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// The operation timeout on the paths that write with blocking writes (a
// connection without a descriptor, here in-memory pipes; and every
// connection off Linux): the transmit goroutine calls afterLocked, which
// arms the timer and is where Progress is seen to move, only when a whole
// write of up to txChunk (256 KiB) has returned.

// postBigWrite posts a signaled 1 MiB Write from e.
func postBigWrite(t *testing.T, e *end) {
	t.Helper()
	src := e.register(t, make([]byte, 1<<20), 0)
	e.post(t, rdmap.SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{whole(src)}, Remote: rdma.RemoteBuffer{STag: 0x5500}})
}

// TestReview2OpTimeoutNeverArmedBlockingWrite: a Write posted to a peer
// that never reads. PostSend calls no afterLocked and the first blocking
// write never returns, so the operation timeout is never armed: the QP
// stays in RTS for ever (a day here) with the Write outstanding, although
// OpTimeout promises ErrPeerStalled once the peer does not "read what is
// sent" within it. The poster (or the transmit goroutine, before its
// write) must arm the timer when the Core starts waiting.
func TestReview2OpTimeoutNeverArmedBlockingWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := scriptedPipe(t, timedOpts())
		postBigWrite(t, e)
		settle(24 * time.Hour)
		err := e.qp.Err()
		e.qp.Close()
		if !errors.Is(err, ErrPeerStalled) {
			t.Fatalf("QP error %v a day after a Write to a peer that never reads (operation timeout %v), want %v", err, opTimeout, ErrPeerStalled)
		}
	})
}

// TestReview2OpTimeoutSlowReaderBlockingWrites: a peer that reads steadily
// but slowly (1 KiB every 100 ms, 10 KiB/s) makes progress every 100 ms,
// yet once the timer is armed (after the first 256 KiB chunk, 25.6 s) the
// QP fails with ErrPeerStalled one operation timeout later, because the
// next chunk takes 25.6 s to be read. txChunk's comment says it exists "so
// that the operation timeout sees progress while a slow peer reads": only
// if the peer reads a chunk within the timeout. Progress must be seen as
// the write proceeds (writes sized from the timeout, or a write deadline of
// one period that resumes).
func TestReview2OpTimeoutSlowReaderBlockingWrites(t *testing.T) {
	// Each rate is far above nothing: the peer reads every period.
	for _, r := range []struct {
		chunk int
		every time.Duration
	}{{1024, 100 * time.Millisecond}, {256, 200 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%dB-every-%v", r.chunk, r.every), func(t *testing.T) {
			slowReader(t, r.chunk, r.every)
		})
	}
}

// slowReader runs finding 6 with a peer reading chunk octets every every.
func slowReader(t *testing.T, chunk int, every time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		e, p := scriptedPipe(t, timedOpts())
		postBigWrite(t, e)
		stop, exited := make(chan struct{}), make(chan int)
		go func() { // the slow reader
			buf, read := make([]byte, chunk), 0
			defer func() { exited <- read }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(every):
				}
				n, err := io.ReadFull(p.nc, buf)
				read += n
				if err != nil {
					return
				}
			}
		}()
		const span = 60 * time.Second
		settle(span)
		err := e.qp.Err()
		close(stop)
		read := <-exited
		e.qp.Close()
		if err != nil {
			t.Fatalf("QP failed (%v) while its peer read %d octets every %v (%d in %v; operation timeout %v)", err, chunk, every, read, span, opTimeout)
		}
	})
}
