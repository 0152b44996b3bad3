package iwarp_test

import (
	"context"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestServePrepare: Prepare posts the receive a client's first Send needs
// before the request is accepted, and Handle finds the message on the QP's
// RecvCQ. Without Prepare the Send could find no receive (fatal on iWARP).
func TestServePrepare(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), serveBound)
	defer cancel()
	pd := servePD(t)
	inbox, err := pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	s := startServe(t, &iwarp.ServeConfig{
		PD: pd,
		Prepare: func(qp *iwarp.QP) error {
			return qp.PostRecv(iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{inbox.SGE(0, 64)}})
		},
		Handle: func(ctx context.Context, qp *iwarp.QP) {
			c, err := qp.RecvCQ().Next(ctx)
			if err != nil || c.Status != iwarp.StatusSuccess || c.ID != 7 {
				got <- "error"
				return
			}
			got <- string(inbox.Bytes()[:c.Len])
		},
	})
	qp, err := iwarp.Dial(ctx, s.addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	msg, err := qp.PD().RegisterMemory([]byte("hello"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Send(ctx, msg.SGE(0, 5)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "hello" {
			t.Fatalf("Handle received %q, want hello", m)
		}
	case <-ctx.Done():
		t.Fatal("no message")
	}
}

// TestDialPrepare: Dial runs Prepare before it connects, and an error of
// Prepare ends Dial with it.
func TestDialPrepare(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), serveBound)
	defer cancel()
	s := startServe(t, nil)
	var state iwarp.QPState = 99
	wantErr := iwarp.ErrInvalidConfig
	_, err := iwarp.Dial(ctx, s.addr(), &iwarp.DialConfig{Prepare: func(qp *iwarp.QP) error {
		state = qp.State()
		return wantErr
	}})
	if err != wantErr || state != iwarp.StateIdle {
		t.Fatalf("Dial = %v with the QP %v in Prepare, want %v with it idle", err, state, wantErr)
	}
}

// TestServeAdvertisesCurrentSTag: Serve advertises its memory per
// connection, so a client that connects after MR.Rekey learns the new STag.
func TestServeAdvertisesCurrentSTag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), serveBound)
	defer cancel()
	pd := servePD(t)
	mr, _, err := pd.RegisterWords(1, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, &iwarp.ServeConfig{Memory: []*iwarp.MR{mr}})
	stags := make([]uint32, 0, 2)
	for i := 0; i < 2; i++ {
		qp, err := iwarp.Dial(ctx, s.addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := qp.PeerMemory()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := qp.FetchAdd(ctx, mem[0], 1); err != nil {
			t.Fatalf("client %d: FetchAdd through the advertised STag: %v", i, err)
		}
		stags = append(stags, mem[0].STag)
		qp.Close()
		if i == 0 {
			if _, err := mr.Rekey(ctx, iwarp.AccessRemoteAtomic); err != nil {
				t.Fatal(err)
			}
		}
	}
	if stags[0] == stags[1] || stags[1] != mr.STag() {
		t.Fatalf("advertised STags %#x, then %#x; the region's is %#x", stags[0], stags[1], mr.STag())
	}
}

// servePD returns a PD of a Device the test closes at its end.
func servePD(t *testing.T) *iwarp.PD {
	t.Helper()
	dev := iwarp.NewDevice(nil)
	t.Cleanup(func() { dev.Close() })
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	return pd
}
