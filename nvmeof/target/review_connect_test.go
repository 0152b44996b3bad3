package target

import (
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestReviewDoubleAdminConnect: two admin Connects posted back to back,
// each with its data behind a keyed SGL, are both checked before either's
// data has arrived. Only one may make a controller: the other is a
// Command Sequence Error, and no controller is left registered without a
// queue (it would hold its CNTLID until Close).
func TestReviewDoubleAdminConnect(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	h := mustDial(t, tt.addr, 0, nil)
	d := nvme.ConnectData{CNTLID: nvme.CNTLIDDynamic, SUBNQN: testNQN, HOSTNQN: testHostNQN}
	if err := d.Encode(h.data.Bytes()); err != nil {
		t.Fatal(err)
	}
	k := nvme.Connect{QID: 0, SQSIZE: adminQueueDepth - 1}
	var wrs [2]iwarp.SendWR
	for i := range wrs {
		cmd := k.Command(uint16(i+1), h.keyed(0, nvme.ConnectDataLen))
		if err := cmd.Encode(h.cap.Bytes()[i*nvme.SQELen:]); err != nil {
			t.Fatal(err)
		}
		wrs[i] = iwarp.SendWR{ID: uint64(i), Op: iwarp.OpSend, SGL: []iwarp.SGE{h.cap.SGE(i*nvme.SQELen, nvme.SQELen)}}
	}
	if err := h.qp.PostSend(wrs[:]...); err != nil {
		t.Fatal(err)
	}
	ok, seq := 0, 0
	for range 2 {
		rc, _ := h.next()
		switch {
		case rc.Status.Success():
			ok++
		case rc.Status.Code() == nvme.StatusCommandSequenceError.Code():
			seq++
		default:
			t.Errorf("Connect CID %d: %v", rc.CID, rc.Status)
		}
	}
	if ok != 1 || seq != 1 {
		t.Errorf("%d Connects succeeded and %d were Command Sequence Errors, want 1 and 1", ok, seq)
	}
	tt.mu.Lock()
	n := len(tt.ctrls)
	tt.mu.Unlock()
	if n != 1 {
		t.Errorf("%d controllers registered for one admin queue", n)
	}
}
