package target

import (
	"bytes"
	"math"
	"testing"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestReviewRangeWrap: ranges whose end wraps around 2^64 (SLBA near the
// top, or a DSM range's 32-bit NLB) and Get Log Page offsets and lengths
// at their limits are refused without touching the backend.
func TestReviewRangeWrap(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	for i := range tt.backend.buf {
		tt.backend.buf[i] = 0xA5
	}
	want := bytes.Clone(tt.backend.buf)
	rc := q.exec(nvme.RW{SLBA: math.MaxUint64, NLB: 1}.Command(nvme.NVMWriteZeroes, 0, 1, nvme.NullSGL()), nil)
	wantStatus(t, "Write Zeroes wrapping", rc.Status, nvme.StatusLBAOutOfRange)
	rc = q.exec(nvme.RW{SLBA: math.MaxUint64 - 0xFFFF, NLB: 0xFFFF}.Command(nvme.NVMWrite, 0, 1, q.keyed(0, 0x10000*512)), nil)
	if rc.Status.Success() {
		t.Error("a Write wrapping around 2^64 succeeded")
	}
	for _, r := range []nvme.DSMRange{{SLBA: math.MaxUint64, NLB: 2}, {SLBA: 1, NLB: math.MaxUint32}, {SLBA: 2048, NLB: 0}} {
		rb := make([]byte, nvme.DSMRangeLen)
		r.Encode(rb)
		rc = q.exec(nvme.DSM{Attributes: nvme.DSMDeallocate}.Command(0, 1, nvme.InlineSGL(0, nvme.DSMRangeLen)), rb)
		wantStatus(t, "DSM range out of the namespace", rc.Status, nvme.StatusLBAOutOfRange)
	}
	if !bytes.Equal(tt.backend.buf, want) {
		t.Fatal("the backend changed")
	}
	lp := func(off uint64, numd uint32, n int) nvme.Status {
		g := nvme.GetLogPage{LID: nvme.LogSMART, NUMD: numd, Offset: off}
		return a.exec(g.Command(0, nvme.NSIDAll, a.keyed(0, n)), nil).Status
	}
	wantStatus(t, "offset past the page", lp(nvme.SMARTLogLen+4, 0, 4), nvme.StatusInvalidField)
	wantStatus(t, "offset near 2^64", lp(math.MaxUint64-3, 0, 4), nvme.StatusInvalidField)
	wantStatus(t, "NUMD 2^32-1", lp(0, math.MaxUint32, 4), nvme.StatusInvalidField)
	wantStatus(t, "offset at the page's end", lp(nvme.SMARTLogLen, 0, 4), nvme.StatusSuccess)
	if !bytes.Equal(a.data.Bytes()[:4], make([]byte, 4)) {
		t.Error("bytes past the page's end are not zeros")
	}
}
