package target

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestReviewKeepAliveBusyIO: a controller whose I/O queues carried
// commands within KATO is not torn down when the timer expires, however
// late the host's Keep Alive is (traffic based keep alive, as Linux's
// target does: the timer is rescheduled); a period without any command
// tears it down.
func TestReviewKeepAliveBusyIO(t *testing.T) {
	ft, h, q := keepAliveController(t)
	flush := nvme.Command{Opcode: nvme.NVMFlush, Flags: nvme.FlagSGL, NSID: nsid, DPTR: nvme.NullSGL()}
	wantStatus(t, "Flush", q.exec(flush, nil).Status, nvme.StatusSuccess)
	ft.last(t).f() // KATO without an admin command, but with I/O
	wantStatus(t, "Flush after KATO with I/O", q.exec(flush, nil).Status, nvme.StatusSuccess)
	ft.last(t).f() // the timer was rescheduled; there was I/O again
	stillServes(t, h)
	ft.last(t).f() // nothing since
	wantGone(t, h, "the admin queue after an idle KATO")
	wantGone(t, q, "the I/O queue after an idle KATO")
}

// TestReviewKeepAliveIOConnect: connecting I/O queues is traffic too (as
// Linux's target counts it: a host setting up many queues may not send
// Keep Alive meanwhile).
func TestReviewKeepAliveIOConnect(t *testing.T) {
	ft, h, q := keepAliveController(t)
	ft.last(t).f() // KATO with only an I/O queue's Connect
	stillServes(t, h)
	flush := nvme.Command{Opcode: nvme.NVMFlush, Flags: nvme.FlagSGL, NSID: nsid, DPTR: nvme.NullSGL()}
	wantStatus(t, "Flush", q.exec(flush, nil).Status, nvme.StatusSuccess)
}

// keepAliveController connects an admin queue with a KATO of one second
// to a target whose timers the returned fakeTimers fire, enables the
// controller and connects I/O queue 1.
func keepAliveController(t *testing.T) (*fakeTimers, *rawHost, *rawHost) {
	t.Helper()
	ft := &fakeTimers{armed: make(chan fakeTimer, 64)}
	tt := newTestTargetHook(t, 1<<20, nil, func(tg *Target) { tg.afterFunc = ft.afterFunc })
	h := mustDial(t, tt.addr, 0, nil)
	rc := h.connect(testNQN, nvme.CNTLIDDynamic, 31, 1000, false)
	wantStatus(t, "Connect", rc.Status, nvme.StatusSuccess)
	wantStatus(t, "CC.EN", h.propSet(nvme.PropCC, nvme.CC{EN: true, IOSQES: 6, IOCQES: 4}.Uint32()), nvme.StatusSuccess)
	q := ioQueue(t, tt.addr, 1, nvme.ParseConnectResponse(rc.DW0).CNTLID)
	return ft, h, q
}
