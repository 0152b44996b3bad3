package target

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestDSMLongerSGL: Linux 6.1's host describes 4,096 bytes of ranges in
// every Dataset Management whatever NR says (mkfs.ext4's discard). The
// target deallocates the NR+1 ranges and ignores the rest, in the capsule
// and through a keyed SGL; other commands still need an exact length.
func TestDSMLongerSGL(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	for i := range tt.backend.buf {
		tt.backend.buf[i] = 0xA5
	}
	_, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	page := make([]byte, 4096)
	for i := range page {
		page[i] = 0xFF // ranges past NR+1: garbage that must be ignored
	}
	r := nvme.DSMRange{SLBA: 4, NLB: 2}
	r.Encode(page)
	dsm := nvme.DSM{NR: 0, Attributes: nvme.DSMDeallocate}
	rc := q.exec(dsm.Command(0, 1, nvme.InlineSGL(0, 4096)), page)
	wantStatus(t, "DSM, 4 KiB in the capsule", rc.Status, nvme.StatusSuccess)
	if !bytes.Equal(tt.backend.buf[4*512:6*512], make([]byte, 1024)) || tt.backend.buf[6*512] != 0xA5 || tt.backend.buf[4*512-1] != 0xA5 {
		t.Fatal("in-capsule DSM deallocated the wrong blocks")
	}
	copy(q.data.Bytes(), page)
	r = nvme.DSMRange{SLBA: 8, NLB: 1}
	r.Encode(q.data.Bytes())
	rc = q.exec(dsm.Command(0, 1, q.keyed(0, 4096)), nil)
	wantStatus(t, "DSM, 4 KiB keyed", rc.Status, nvme.StatusSuccess)
	if !bytes.Equal(tt.backend.buf[8*512:9*512], make([]byte, 512)) || tt.backend.buf[9*512] != 0xA5 {
		t.Fatal("keyed DSM deallocated the wrong blocks")
	}
	rc = q.exec(dsm.Command(0, 1, nvme.InlineSGL(0, 8)), page[:8])
	wantStatus(t, "DSM shorter than its ranges", rc.Status, nvme.StatusDataSGLLengthInvalid.WithDNR())
	rc = q.exec(nvme.RW{SLBA: 0, NLB: 0}.Command(nvme.NVMWrite, 0, 1, nvme.InlineSGL(0, 1024)), page[:1024])
	wantStatus(t, "Write with a longer SGL", rc.Status, nvme.StatusDataSGLLengthInvalid.WithDNR())
}
