package host

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// fakeTarget is a small NVMe over RDMA target for the host's tests, driven
// by raw capsules: one controller, one RAM namespace, a discovery log, and
// hooks to make it misbehave.
type fakeTarget struct {
	t        *testing.T
	ln       *iwarp.Listener
	dev      *iwarp.Device
	pd       *iwarp.PD
	addr     string
	bs       int           // the namespace's block size
	inline   int           // in-capsule data offered on I/O queues (0: none)
	mdts     uint8         // MDTS reported
	wz       bool          // Write Zeroes supported
	reject   bool          // reject every connection (NVMe status 6, no resources)
	rejectIO bool          // reject the I/O queues' connections
	kas      chan struct{} // a value per Keep Alive served

	mu    sync.Mutex                               // guards the fields below
	hook  func(qid uint16, cmd nvme.Command) fault // nil: serve everything
	disk  []byte
	cc    nvme.CC
	csts  nvme.CSTS
	qps   []*iwarp.QP
	inCap int // commands that arrived with in-capsule data

	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// fault is what a hook makes the target do with a command.
type fault struct {
	wait   <-chan struct{} // answer once it is closed
	cidXor uint16          // answer with the CID changed so
	drop   bool            // never answer
	close  bool            // close the queue's connection instead of answering
	status nvme.Status     // answer with this status
}

// newFakeTarget listens on loopback; the test's end stops it.
func newFakeTarget(t *testing.T, blocks int) *fakeTarget {
	ft := &fakeTarget{t: t, bs: 512, inline: 4096, mdts: 5, wz: true, kas: make(chan struct{}, 64),
		disk: make([]byte, blocks*512)}
	ft.ctx, ft.cancel = context.WithCancel(context.Background())
	ft.dev = iwarp.NewDevice(nil)
	var err error
	if ft.pd, err = ft.dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if ft.ln, err = iwarp.Listen("tcp", "127.0.0.1:0", nil); err != nil {
		t.Fatal(err)
	}
	ft.addr = ft.ln.Addr().String()
	ft.wg.Go(ft.acceptLoop)
	t.Cleanup(ft.stop)
	return ft
}

// stop closes the listener and every connection and waits for the
// target's goroutines.
func (ft *fakeTarget) stop() {
	ft.cancel()
	ft.ln.Close()
	ft.killAll()
	ft.wg.Wait()
	ft.dev.Close()
}

// setHook makes hook decide what the target does with each command.
func (ft *fakeTarget) setHook(hook func(qid uint16, cmd nvme.Command) fault) {
	ft.mu.Lock()
	ft.hook = hook
	ft.mu.Unlock()
}

// killAll closes every connection at once (the target dies).
func (ft *fakeTarget) killAll() {
	ft.mu.Lock()
	qps := append([]*iwarp.QP(nil), ft.qps...)
	ft.mu.Unlock()
	for _, qp := range qps {
		qp.Close()
	}
}

func (ft *fakeTarget) acceptLoop() {
	for {
		req, err := ft.ln.Accept(ft.ctx)
		if err != nil {
			return
		}
		ft.wg.Go(func() { ft.serve(req) })
	}
}

// serve runs one queue: the RDMA_CM exchange, then its commands in order.
func (ft *fakeTarget) serve(req *iwarp.ConnRequest) {
	reject := func(sts nvme.CMStatus) {
		b := make([]byte, nvme.CMRejectLen)
		r := nvme.CMReject{STS: sts}
		r.Encode(b)
		req.Reject(b)
	}
	if ft.reject {
		reject(nvme.CMNoResources)
		return
	}
	cr, err := nvme.DecodeCMRequest(req.PrivateData())
	if err != nil {
		reject(err.(nvme.CMStatus))
		return
	}
	qid, hrq, nrecv := cr.QID, int(cr.HRQSIZE), int(cr.HSQSIZE)+1
	if ft.rejectIO && qid > 0 {
		reject(nvme.CMNoResources)
		return
	}
	capLen := sqeLen
	if qid > 0 {
		capLen += ft.inline
	}
	cq, err := ft.dev.NewCQ(nrecv+hrq+2, nil)
	if err != nil {
		return
	}
	defer cq.Close()
	qp, err := ft.pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: hrq + 2, RecvQueueDepth: nrecv})
	if err != nil {
		return
	}
	defer qp.Close()
	ft.mu.Lock()
	ft.qps = append(ft.qps, qp)
	ft.mu.Unlock()
	rb, _ := ft.pd.RegisterMemory(make([]byte, nrecv*capLen), iwarp.AccessLocalWrite)
	data, _ := ft.pd.RegisterMemory(make([]byte, 4096<<ft.mdts+4096), iwarp.AccessLocalWrite|iwarp.AccessRemoteWrite)
	rsp, _ := ft.pd.RegisterMemory(make([]byte, cqeLen), 0)
	defer rb.Close()
	defer data.Close()
	defer rsp.Close()
	for i := range nrecv {
		qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{rb.SGE(i*capLen, capLen)}})
	}
	rep := make([]byte, nvme.CMReplyLen)
	(&nvme.CMReply{CRQSIZE: uint16(nrecv)}).Encode(rep)
	if err := req.Accept(ft.ctx, qp, &iwarp.ConnOptions{PrivateData: rep}); err != nil {
		return
	}
	s := &fakeQueue{ft: ft, qp: qp, qid: qid, data: data, rsp: rsp}
	capsule := make([]byte, capLen)
	for {
		c, err := cq.Next(ft.ctx)
		if err != nil || c.Status != iwarp.StatusSuccess {
			return
		}
		if c.Op != iwarp.OpRecv {
			continue
		}
		n := copy(capsule, rb.Bytes()[int(c.ID)*capLen:int(c.ID)*capLen+c.Len])
		s.sgl[0] = rb.SGE(int(c.ID)*capLen, capLen)
		qp.PostRecv(iwarp.RecvWR{ID: c.ID, SGL: s.sgl[:]})
		if !s.handle(capsule[:n]) {
			qp.Close()
			return
		}
	}
}

// fakeQueue is one queue of the fake target (its serving goroutine's).
type fakeQueue struct {
	ft        *fakeTarget
	qp        *iwarp.QP
	qid       uint16
	data, rsp *iwarp.MR
	sqhd      uint16
	sgl       [1]iwarp.SGE
}

// handle serves one command capsule; false closes the connection.
func (s *fakeQueue) handle(capsule []byte) bool {
	cmd, err := nvme.DecodeCommand(capsule)
	if err != nil {
		return false
	}
	f := fault{}
	s.ft.mu.Lock()
	hook := s.ft.hook
	s.ft.mu.Unlock()
	if hook != nil {
		f = hook(s.qid, cmd)
	}
	switch {
	case f.close:
		return false
	case f.drop:
		return true
	case f.wait != nil:
		select {
		case <-f.wait:
		case <-s.ft.ctx.Done():
			return false
		}
	}
	var dw0, dw1 uint32
	status := f.status
	if status == 0 {
		dw0, dw1, status = s.exec(&cmd, capsule[sqeLen:])
	}
	s.sqhd++
	r := nvme.Completion{DW0: dw0, DW1: dw1, SQHD: s.sqhd, SQID: s.qid, CID: cmd.CID ^ f.cidXor, Status: status}
	r.Encode(s.rsp.Bytes())
	return s.qp.Send(s.ft.ctx, s.rsp.SGE(0, cqeLen)) == nil
}

// pull fetches a command's host-to-controller data.
func (s *fakeQueue) pull(cmd *nvme.Command, inline []byte) ([]byte, error) {
	d := cmd.DPTR
	n := int(d.Length())
	if kind, _ := d.Classify(); kind == nvme.SGLInCapsule {
		s.ft.mu.Lock()
		s.ft.inCap++
		s.ft.mu.Unlock()
		if d.CheckInCapsule(len(inline)) != 0 {
			return nil, errors.New("bad in-capsule data")
		}
		return inline[d.Address() : d.Address()+uint64(n)], nil
	}
	if n > s.data.Len() {
		return nil, errors.New("too long")
	}
	remote := iwarp.RemoteBuffer{STag: d.Key(), TO: d.Address(), Len: uint32(n)}
	if err := s.qp.Read(s.ft.ctx, remote, s.data.SGE(0, n)); err != nil {
		return nil, err
	}
	return s.data.Bytes()[:n], nil
}

// push sends p to the host buffer a command's keyed SGL names.
func (s *fakeQueue) push(cmd *nvme.Command, p []byte) error {
	n := min(len(p), int(cmd.DPTR.Length()))
	copy(s.data.Bytes(), p[:n])
	return s.pushData(cmd, n)
}

// pushData sends the first n bytes of the queue's data buffer to the host
// buffer a command's keyed SGL names.
func (s *fakeQueue) pushData(cmd *nvme.Command, n int) error {
	d := cmd.DPTR
	remote := iwarp.RemoteBuffer{STag: d.Key(), TO: d.Address(), Len: uint32(n)}
	return s.qp.Write(s.ft.ctx, remote, s.data.SGE(0, n))
}
