package target

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// TestAdminQueue brings a controller up as Linux's host does and checks
// what it reports.
func TestAdminQueue(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	if cntlid == 0 || cntlid > 0xFFEF {
		t.Errorf("CNTLID %#x", cntlid)
	}
	v, st := a.propGet(nvme.PropCAP)
	wantStatus(t, "CAP", st, nvme.StatusSuccess)
	if c := nvme.ParseCAP(v); c.MQES != DefaultQueueDepth-1 || !c.CQR || c.TO == 0 || c.CSS != nvme.CSSNVM || c.MPSMIN != 0 {
		t.Errorf("CAP %+v", c)
	}
	v, _ = a.propGet(nvme.PropVS)
	if nvme.Version(v) != nvme.Version1_3 {
		t.Errorf("VS %v", nvme.Version(v))
	}
	rc := a.exec(nvme.Identify{CNS: nvme.CNSController}.Command(0, 0, a.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify controller", rc.Status, nvme.StatusSuccess)
	id, err := nvme.DecodeController(a.data.Bytes()[:nvme.IdentifyLen])
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case id.CNTLID != cntlid, id.SUBNQN != testNQN, id.CNTRLTYPE != nvme.CtrlTypeIO,
		id.SGLS&nvme.SGLSKeyed == 0, id.SGLS&nvme.SGLSOffset == 0, id.ICDOFF != 0, id.KAS == 0,
		id.IOCCSZ != (nvme.SQELen+DefaultInlineDataSize)/16, id.IORCSZ != 1, id.MDTS != 5,
		id.NN != 1, id.MAXCMD != DefaultQueueDepth, id.VER != nvme.Version1_3,
		id.ONCS&(nvme.ONCSDSM|nvme.ONCSWriteZeroes) != nvme.ONCSDSM|nvme.ONCSWriteZeroes:
		t.Errorf("Identify Controller: %+v", id)
	}
	rc = a.exec(nvme.Identify{CNS: nvme.CNSNamespace}.Command(0, 1, a.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify namespace", rc.Status, nvme.StatusSuccess)
	ns, _ := nvme.DecodeNamespace(a.data.Bytes()[:nvme.IdentifyLen])
	if ns.NSZE != 2048 || ns.NCAP != 2048 || ns.BlockSize() != 512 || ns.NGUID == ([16]byte{}) {
		t.Errorf("Identify Namespace: %+v", ns)
	}
	rc = a.exec(nvme.Identify{CNS: nvme.CNSActiveNSList}.Command(0, 0, a.keyed(0, nvme.IdentifyLen)), nil)
	ids, _ := nvme.DecodeNSList(nil, a.data.Bytes()[:nvme.IdentifyLen])
	if !rc.Status.Success() || len(ids) != 1 || ids[0] != 1 {
		t.Errorf("active namespace list %v (%v)", ids, rc.Status)
	}
	rc = a.exec(nvme.Identify{CNS: nvme.CNSNSDescList}.Command(0, 1, a.keyed(0, nvme.IdentifyLen)), nil)
	descs, _ := nvme.DecodeNSDescList(a.data.Bytes()[:nvme.IdentifyLen])
	if !rc.Status.Success() || len(descs) != 3 || !bytes.Equal(descs[0].NID, ns.NGUID[:]) {
		t.Errorf("descriptor list %v (%v)", descs, rc.Status)
	}
	rc = a.exec(nvme.Feature{FID: nvme.FeatNumQueues, Value: nvme.NumQueues{NSQ: 99, NCQ: 99}.Uint32()}.SetCommand(0, 0), nil)
	if n := nvme.ParseNumQueues(rc.DW0); !rc.Status.Success() || n.NSQ != DefaultMaxIOQueues-1 || n.NCQ != DefaultMaxIOQueues-1 {
		t.Errorf("Number of Queues: %+v (%v)", n, rc.Status)
	}
	wantStatus(t, "Keep Alive", a.exec(nvme.Command{Opcode: nvme.AdminKeepAlive, Flags: nvme.FlagSGL}, nil).Status, nvme.StatusSuccess)
}

// TestIO reads and writes through keyed SGLs and in-capsule data.
func TestIO(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	_, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)

	pattern := make([]byte, 8*512)
	for i := range pattern {
		pattern[i] = byte(i*7 + 3)
	}
	copy(q.data.Bytes(), pattern)
	rc := q.exec(nvme.RW{SLBA: 10, NLB: 7}.Command(nvme.NVMWrite, 0, 1, q.keyed(0, len(pattern))), nil)
	wantStatus(t, "Write (keyed)", rc.Status, nvme.StatusSuccess)
	if got := tt.backend.buf[10*512 : 18*512]; !bytes.Equal(got, pattern) {
		t.Fatal("the backend does not hold what was written")
	}
	clear(q.data.Bytes()[:len(pattern)])
	rc = q.exec(nvme.RW{SLBA: 10, NLB: 7}.Command(nvme.NVMRead, 0, 1, q.keyed(4096, len(pattern))), nil)
	wantStatus(t, "Read (keyed)", rc.Status, nvme.StatusSuccess)
	if !bytes.Equal(q.data.Bytes()[4096:4096+len(pattern)], pattern) {
		t.Fatal("read back something else")
	}
	rc = q.exec(nvme.RW{SLBA: 0, NLB: 1}.Command(nvme.NVMWrite, 0, 1, nvme.InlineSGL(0, 1024)), pattern[:1024])
	wantStatus(t, "Write (in-capsule)", rc.Status, nvme.StatusSuccess)
	if !bytes.Equal(tt.backend.buf[:1024], pattern[:1024]) {
		t.Fatal("in-capsule write not in the backend")
	}
	wantStatus(t, "Flush", q.exec(nvme.Command{Opcode: nvme.NVMFlush, Flags: nvme.FlagSGL, NSID: 1}, nil).Status, nvme.StatusSuccess)
	rc = q.exec(nvme.RW{SLBA: 11, NLB: 1}.Command(nvme.NVMWriteZeroes, 0, 1, nvme.SGL{}), nil)
	wantStatus(t, "Write Zeroes", rc.Status, nvme.StatusSuccess)
	if !bytes.Equal(tt.backend.buf[11*512:13*512], make([]byte, 1024)) || tt.backend.buf[13*512] != pattern[3*512] {
		t.Fatal("Write Zeroes zeroed the wrong blocks")
	}
	r := nvme.DSMRange{SLBA: 14, NLB: 2}
	rb := make([]byte, nvme.DSMRangeLen)
	r.Encode(rb)
	rc = q.exec(nvme.DSM{NR: 0, Attributes: nvme.DSMDeallocate}.Command(0, 1, nvme.InlineSGL(0, nvme.DSMRangeLen)), rb)
	wantStatus(t, "Dataset Management", rc.Status, nvme.StatusSuccess)
	if !bytes.Equal(tt.backend.buf[14*512:16*512], make([]byte, 1024)) || tt.backend.buf[16*512] != pattern[6*512] {
		t.Fatal("deallocate zeroed the wrong blocks")
	}
}

// TestSendWithInvalidate: a keyed SGL of subtype Invalidate Key is
// answered with Send with Invalidate of that key.
func TestSendWithInvalidate(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	_, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	key := q.data.STag()
	q.submit(nvme.RW{SLBA: 0, NLB: 7}.Command(nvme.NVMRead, 0, 1, nvme.KeyedSGLInvalidate(0, 4096, key)), nil)
	rc, inv := q.next()
	wantStatus(t, "Read", rc.Status, nvme.StatusSuccess)
	if inv != key || q.data.Valid() {
		t.Errorf("invalidated STag %#x (region valid %v), want %#x", inv, q.data.Valid(), key)
	}
	// Without data there is nothing to invalidate.
	if _, err := q.data.Rekey(q.ctx, q.data.Access()); err != nil {
		t.Fatal(err)
	}
	q.submit(nvme.Command{Opcode: nvme.NVMFlush, Flags: nvme.FlagSGL, NSID: 1,
		DPTR: nvme.KeyedSGLInvalidate(0, 0, q.data.STag())}, nil)
	if rc, inv := q.next(); !rc.Status.Success() || inv != 0 {
		t.Errorf("Flush: %v, invalidated %#x", rc.Status, inv)
	}
}

// TestManyInFlight keeps a queue full of reads and writes and checks
// every one.
func TestManyInFlight(t *testing.T) {
	tt := newTestTarget(t, 4<<20, nil)
	_, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	const n = 100 // commands in flight, each 4 KiB
	for i := range n {
		b := q.data.Bytes()[i*4096 : (i+1)*4096]
		for j := range b {
			b[j] = byte(i + j)
		}
	}
	cids := map[uint16]int{}
	for i := range n {
		cids[q.submit(nvme.RW{SLBA: uint64(i * 8), NLB: 7}.Command(nvme.NVMWrite, 0, 1, q.keyed(i*4096, 4096)), nil)] = i
	}
	for range n {
		rc, _ := q.next()
		if _, ok := cids[rc.CID]; !ok || !rc.Status.Success() {
			t.Fatalf("response CID %d status %v", rc.CID, rc.Status)
		}
		delete(cids, rc.CID)
	}
	clear(q.data.Bytes())
	for i := range n {
		q.submit(nvme.RW{SLBA: uint64(i * 8), NLB: 7}.Command(nvme.NVMRead, 0, 1, q.keyed(i*4096, 4096)), nil)
	}
	for range n {
		if rc, _ := q.next(); !rc.Status.Success() {
			t.Fatalf("read: %v", rc.Status)
		}
	}
	for i := range n {
		b := q.data.Bytes()[i*4096 : (i+1)*4096]
		for j := range b {
			if b[j] != byte(i+j) {
				t.Fatalf("block %d byte %d: %#x", i*8, j, b[j])
			}
		}
	}
}
