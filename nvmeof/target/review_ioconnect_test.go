package target

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestReviewIOQueueAfterReset: an I/O queue's Connect checks that the
// controller is ready and that its QID is allowed in the same critical
// section that records the queue. Checked before (as they were), a
// reset (CC.EN 1 to 0) or a Set Features (Number of Queues) landing in
// between let the queue in: it outlived the reset that deletes the I/O
// queues, or had a QID above those granted.
func TestReviewIOQueueAfterReset(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	tt.mu.Lock()
	ctrl := tt.ctrls[cntlid]
	tt.mu.Unlock()
	// The Connect found the controller ready; the reset comes now.
	wantStatus(t, "CC.EN 0", a.propSet(nvme.PropCC, 0), nvme.StatusSuccess)
	q := &queue{t: tt.Target, qid: 1}
	st, _ := ctrl.addIOQueue(1, q)
	defer ctrl.removeIOQueue(q)
	wantStatus(t, "recording an I/O queue after the reset", st, nvme.StatusCommandSequenceError)

	wantStatus(t, "CC.EN 1", a.propSet(nvme.PropCC, nvme.CC{EN: true, IOSQES: 6, IOCQES: 4}.Uint32()), nvme.StatusSuccess)
	// The Connect found QID 2 allowed; one I/O queue is granted now.
	rc := a.exec(nvme.Feature{FID: nvme.FeatNumQueues, Value: 0}.SetCommand(0, 0), nil)
	wantStatus(t, "Set Features Number of Queues", rc.Status, nvme.StatusSuccess)
	q2 := &queue{t: tt.Target, qid: 2}
	st, badQID := ctrl.addIOQueue(2, q2)
	defer ctrl.removeIOQueue(q2)
	wantStatus(t, "recording I/O queue 2 of 1 granted", st, nvme.StatusConnectInvalidParameters)
	if !badQID {
		t.Error("QID 2 of 1 granted is not named as the invalid parameter")
	}
}
