package target

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// The tests drive the target with rawHost: one queue of a host that
// builds its capsules byte by byte, so that it can misbehave.

const (
	testNQN     = "nqn.2024-01.org.goiwarp:test"
	testHostNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001"
	hostDataLen = 1 << 20
)

// testTarget is a Target serving on loopback.
type testTarget struct {
	*Target
	addr    string
	backend *MemoryBackend
}

// newTestTarget starts a target of size bytes (cfg's other fields as
// given); the test's end closes it.
func newTestTarget(t *testing.T, size int64, cfg *Config) *testTarget {
	t.Helper()
	return newTestTargetHook(t, size, cfg, nil)
}

// newTestTargetHook is newTestTarget calling hook, if not nil, before
// the target serves.
func newTestTargetHook(t *testing.T, size int64, cfg *Config, hook func(*Target)) *testTarget {
	t.Helper()
	be, err := NewMemoryBackend(size)
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.NQN == "" {
		c.NQN = testNQN
	}
	c.Backend = be
	tg, err := New(&c)
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(tg)
	}
	ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tg.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		if err := tg.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
		ln.Close()
	})
	return &testTarget{Target: tg, addr: ln.Addr().String(), backend: be}
}

// rawHost is one queue of a host.
type rawHost struct {
	t      *testing.T
	ctx    context.Context
	dev    *iwarp.Device
	pd     *iwarp.PD
	cq     *iwarp.CQ
	qp     *iwarp.QP
	qid    uint16
	hrq    int
	rsp    *iwarp.MR // hrq response buffers
	cap    *iwarp.MR // the capsule being sent
	data   *iwarp.MR // the host's data buffer, remotely readable and writable
	cid    uint16
	inline int // in-capsule room the capsule buffer has
}

// dialOpts shapes a rawHost's connection.
type dialOpts struct {
	hrq, hsq int    // HRQSIZE and HSQSIZE+1 (0: 32 for the admin queue, 128)
	priv     []byte // private data instead of the NVMe request (nil: the request)
	dev      *iwarp.Device
}

// dial connects queue qid to tt. The test's end closes it.
func dial(t *testing.T, addr string, qid uint16, o *dialOpts) (*rawHost, error) {
	t.Helper()
	var opt dialOpts
	if o != nil {
		opt = *o
	}
	if opt.hsq == 0 {
		opt.hsq = 128
		if qid == 0 {
			opt.hsq = 32
		}
	}
	if opt.hrq == 0 {
		opt.hrq = opt.hsq
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	h := &rawHost{t: t, ctx: ctx, qid: qid, hrq: opt.hrq, dev: opt.dev, inline: 16 << 10}
	if h.dev == nil {
		h.dev = iwarp.NewDevice(nil)
		t.Cleanup(func() { h.dev.Close() })
	}
	var err error
	must := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	h.pd, err = h.dev.AllocPD()
	must(err)
	h.cq, err = h.dev.NewCQ(2*opt.hsq+opt.hrq+8, nil)
	must(err)
	h.qp, err = h.pd.NewQP(&iwarp.QPConfig{SendCQ: h.cq, RecvCQ: h.cq, SendQueueDepth: 2*opt.hsq + 8,
		RecvQueueDepth: opt.hrq, MaxSGE: 2})
	must(err)
	h.rsp, err = h.pd.RegisterMemory(make([]byte, opt.hrq*nvme.CQELen), iwarp.AccessLocalWrite)
	must(err)
	h.cap, err = h.pd.RegisterMemory(make([]byte, nvme.SQELen+h.inline), 0)
	must(err)
	h.data, err = h.pd.RegisterMemory(make([]byte, hostDataLen),
		iwarp.AccessLocalWrite|iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite|iwarp.AccessRemoteInvalidate)
	must(err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.qp.Close() })
	for i := range opt.hrq {
		must(h.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{h.rsp.SGE(i*nvme.CQELen, nvme.CQELen)}}))
	}
	priv := opt.priv
	if priv == nil {
		priv = make([]byte, nvme.CMRequestLen)
		r := nvme.CMRequest{QID: qid, HRQSIZE: uint16(opt.hrq), HSQSIZE: uint16(opt.hsq - 1)}
		must(r.Encode(priv))
	}
	if err != nil {
		t.Fatal(err)
	}
	return h, h.qp.Connect(ctx, "tcp", addr, &iwarp.ConnOptions{PrivateData: priv})
}

// mustDial is dial that fails the test on error.
func mustDial(t *testing.T, addr string, qid uint16, o *dialOpts) *rawHost {
	t.Helper()
	h, err := dial(t, addr, qid, o)
	if err != nil {
		t.Fatalf("connecting queue %d: %v", qid, err)
	}
	return h
}

// sendRaw sends b as a capsule (a Send of len(b) bytes).
func (h *rawHost) sendRaw(b []byte) {
	h.t.Helper()
	copy(h.cap.Bytes(), b)
	if err := h.qp.Send(h.ctx, h.cap.SGE(0, len(b))); err != nil {
		h.t.Fatalf("sending a capsule: %v", err)
	}
}

// submit sends cmd with a fresh CID, and in-capsule data if inline is
// not nil; it returns the CID.
func (h *rawHost) submit(cmd nvme.Command, inline []byte) uint16 {
	h.t.Helper()
	h.cid++
	cmd.CID = h.cid
	b := make([]byte, nvme.SQELen+len(inline))
	if err := cmd.Encode(b); err != nil {
		h.t.Fatal(err)
	}
	copy(b[nvme.SQELen:], inline)
	h.sendRaw(b)
	return cmd.CID
}

// next waits for the next response capsule (and reposts its receive);
// with invalidated it also returns the STag a Send with Invalidate
// invalidated.
func (h *rawHost) next() (nvme.Completion, uint32) {
	h.t.Helper()
	for {
		wc, err := h.cq.Next(h.ctx)
		if err != nil {
			h.t.Fatalf("waiting for a response: %v", err)
		}
		if wc.Status != iwarp.StatusSuccess {
			h.t.Fatalf("queue %d failed: %v %v (%v)", h.qid, wc.Op, wc.Status, wc.Err)
		}
		if wc.Op != iwarp.OpRecv {
			continue
		}
		if wc.Len != nvme.CQELen {
			h.t.Fatalf("a response of %d bytes", wc.Len)
		}
		i := int(wc.ID)
		rc, _ := nvme.DecodeCompletion(h.rsp.Bytes()[i*nvme.CQELen:])
		if err := h.qp.PostRecv(iwarp.RecvWR{ID: wc.ID, SGL: []iwarp.SGE{h.rsp.SGE(i*nvme.CQELen, nvme.CQELen)}}); err != nil {
			h.t.Fatal(err)
		}
		return rc, wc.Invalidated
	}
}

// exec runs one command and returns its completion, checking the CID.
func (h *rawHost) exec(cmd nvme.Command, inline []byte) nvme.Completion {
	h.t.Helper()
	cid := h.submit(cmd, inline)
	rc, _ := h.next()
	if rc.CID != cid {
		h.t.Fatalf("response for CID %d, want %d", rc.CID, cid)
	}
	if rc.SQID != h.qid {
		h.t.Errorf("response SQID %d, want %d", rc.SQID, h.qid)
	}
	return rc
}

// keyed returns a keyed SGL naming n bytes at off of the host's data
// buffer.
func (h *rawHost) keyed(off, n int) nvme.SGL {
	return nvme.KeyedSGL(uint64(off), uint32(n), h.data.STag())
}

// connect sends the queue's Connect with data in the capsule (inline) or
// through a keyed SGL, and returns its completion.
func (h *rawHost) connect(subnqn string, cntlid uint16, sqsize uint16, kato uint32, inline bool) nvme.Completion {
	h.t.Helper()
	d := nvme.ConnectData{CNTLID: cntlid, SUBNQN: subnqn, HOSTNQN: testHostNQN}
	d.HOSTID[0] = 1
	b := make([]byte, nvme.ConnectDataLen)
	if err := d.Encode(b); err != nil {
		h.t.Fatal(err)
	}
	k := nvme.Connect{QID: h.qid, SQSIZE: sqsize, KATO: kato}
	if inline {
		return h.exec(k.Command(0, nvme.InlineSGL(0, nvme.ConnectDataLen)), b)
	}
	copy(h.data.Bytes(), b)
	return h.exec(k.Command(0, h.keyed(0, nvme.ConnectDataLen)), nil)
}

// propGet reads a property.
func (h *rawHost) propGet(ofst uint32) (uint64, nvme.Status) {
	h.t.Helper()
	rc := h.exec(nvme.PropertyGetCommand(0, ofst, nvme.PropertySizeOf(ofst)), nil)
	return rc.Result(), rc.Status
}

// propSet writes a 4-byte property.
func (h *rawHost) propSet(ofst uint32, v uint32) nvme.Status {
	h.t.Helper()
	return h.exec(nvme.PropertySetCommand(0, ofst, 4, uint64(v)), nil).Status
}

// wantStatus fails the test unless st is want (SCT and SC).
func wantStatus(t *testing.T, what string, st, want nvme.Status) {
	t.Helper()
	if st.Code() != want.Code() {
		t.Errorf("%s: status %v, want %v", what, st, want)
	}
}

// admin connects an admin queue of subsystem nqn and enables its
// controller as Linux's host does; it returns the queue and the CNTLID.
func admin(t *testing.T, addr, nqn string) (*rawHost, uint16) {
	t.Helper()
	h := mustDial(t, addr, 0, nil)
	rc := h.connect(nqn, nvme.CNTLIDDynamic, adminQueueDepth-1, 0, false)
	wantStatus(t, "admin Connect", rc.Status, nvme.StatusSuccess)
	cntlid := nvme.ParseConnectResponse(rc.DW0).CNTLID
	cc := nvme.CC{EN: true, IOSQES: 6, IOCQES: 4}
	if nqn == nvmeof.DiscoveryNQN {
		cc.IOSQES, cc.IOCQES = 0, 0
	}
	wantStatus(t, "Property Set CC", h.propSet(nvme.PropCC, cc.Uint32()), nvme.StatusSuccess)
	csts, st := h.propGet(nvme.PropCSTS)
	wantStatus(t, "Property Get CSTS", st, nvme.StatusSuccess)
	if !nvme.ParseCSTS(uint32(csts)).RDY {
		t.Fatalf("CSTS %#x: not ready after CC.EN", csts)
	}
	return h, cntlid
}

// ioQueue connects I/O queue qid of controller cntlid.
func ioQueue(t *testing.T, addr string, qid, cntlid uint16) *rawHost {
	t.Helper()
	h := mustDial(t, addr, qid, nil)
	rc := h.connect(testNQN, cntlid, 127, 0, true)
	wantStatus(t, "I/O Connect", rc.Status, nvme.StatusSuccess)
	return h
}

// le is the byte order of every NVMe field.
var le = binary.LittleEndian

// splitAddr splits a listener's address into host and port.
func splitAddr(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}
