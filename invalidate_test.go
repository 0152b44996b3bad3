package iwarp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestSendWithInvalidate: the receiver invalidates the named STag once the
// message is placed and reports it in the completion; the old STag then
// fails at once (a later Write to it is terminated as invalid STag).
func TestSendWithInvalidate(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	exposed, _ := b.pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite|iwarp.AccessRemoteInvalidate)
	rb, _ := b.pd.RegisterMemory(make([]byte, 16), iwarp.AccessLocalWrite)
	if err := b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rb.SGE(0, 16)}}); err != nil {
		t.Fatal(err)
	}
	stag := exposed.STag()
	if err := a.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpSend, InvalidateSTag: stag, Flags: iwarp.Invalidate | iwarp.Solicited}); err != nil {
		t.Fatal(err)
	}
	c, err := b.cq.Next(ctx)
	if err != nil || c.Invalidated != stag || !c.Solicited || c.Op != iwarp.OpRecv {
		t.Fatalf("completion %+v %v", c, err)
	}
	if exposed.Valid() {
		t.Fatal("the STag is still valid")
	}
	src, _ := a.pd.RegisterMemory(make([]byte, 8), 0)
	if err := a.qp.Write(ctx, exposed.Remote(), src.SGE(0, 8)); err != nil {
		t.Fatal(err) // handed to TCP; the target refuses it
	}
	<-b.qp.Done()
	var te *iwarp.TerminateError
	if !errors.As(b.qp.Err(), &te) || te.Code != iwarp.TermDDPInvalidSTag {
		t.Fatalf("Write to the invalidated STag: %v", b.qp.Err())
	}
}

// TestSendWithInvalidateRefused: an STag that is not remotely
// invalidatable is refused with Terminate RDMAP/1/0x09.
func TestSendWithInvalidateRefused(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	plain, _ := b.pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteWrite)
	rb, _ := b.pd.RegisterMemory(make([]byte, 16), iwarp.AccessLocalWrite)
	if err := b.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rb.SGE(0, 16)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(iwarp.SendWR{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Invalidate, InvalidateSTag: plain.STag()}); err != nil {
		t.Fatal(err)
	}
	wantTerminated(t, ctx, b, true, iwarp.TermRDMAPProtInvalidate)
	if !plain.Valid() {
		t.Fatal("a refused invalidation invalidated the STag")
	}
}

// TestLocalInvalidateAndRekey: a local-invalidate WR makes the STag fail
// for new arrivals; Rekey gives the memory a new STag and the old one stays
// dead; a Read with invalidate invalidates its sink once placed.
func TestLocalInvalidateAndRekey(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	target, _ := b.pd.RegisterMemory(make([]byte, 64), iwarp.AccessRemoteRead)
	old := target.STag()
	c, err := b.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpLocalInvalidate, InvalidateSTag: old})
	if err != nil || c.Status != iwarp.StatusSuccess || target.Valid() {
		t.Fatalf("local invalidate %+v %v, valid=%v", c, err, target.Valid())
	}
	c, err = b.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpLocalInvalidate, InvalidateSTag: old})
	if err != nil || c.Status != iwarp.StatusLocalProtection {
		t.Fatalf("invalidating an invalid STag: %+v %v", c, err)
	}
	fresh, err := target.Rekey(context.Background(), iwarp.AccessRemoteRead)
	if err != nil || fresh == old || !target.Valid() {
		t.Fatalf("rekey %x (old %x) %v", fresh, old, err)
	}
	sink, _ := a.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
	if _, err := a.qp.Do(ctx, iwarp.SendWR{Op: iwarp.OpRead, Flags: iwarp.Invalidate, SGL: []iwarp.SGE{sink.SGE(0, 64)}, Remote: target.Remote()}); err != nil {
		t.Fatal(err)
	}
	if sink.Valid() {
		t.Fatal("Read with invalidate left its sink valid")
	}
	// The old STag is dead for new arrivals.
	stale := target.Remote()
	stale.STag = old
	other, _ := a.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
	_ = a.qp.PostSend(iwarp.SendWR{Op: iwarp.OpRead, SGL: []iwarp.SGE{other.SGE(0, 64)}, Remote: stale})
	<-b.qp.Done()
	var te *iwarp.TerminateError
	if !errors.As(b.qp.Err(), &te) || te.Code != iwarp.TermRDMAPInvalidSTag {
		t.Fatalf("Read through the re-keyed-away STag: %v", b.qp.Err())
	}
}
