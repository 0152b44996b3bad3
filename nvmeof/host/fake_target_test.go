package host

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/goiwarp/iwarp"
)

// fakeTarget is a small NVMe over RDMA target for the host's tests, driven
// by raw capsules: one controller, one RAM namespace, a discovery log, and
// hooks to make it misbehave.
type fakeTarget struct {
	t      *testing.T
	ln     *iwarp.Listener
	dev    *iwarp.Device
	pd     *iwarp.PD
	addr   string
	bs     int           // the namespace's block size
	inline int           // in-capsule data offered on I/O queues (0: none)
	mdts   uint8         // MDTS reported
	wz     bool          // Write Zeroes supported
	reject bool          // reject every connection (NVMe status 6, no resources)
	kas    chan struct{} // a value per Keep Alive served

	mu    sync.Mutex                         // guards the fields below
	hook  func(qid uint16, sqe []byte) fault // nil: serve everything
	disk  []byte
	cc    uint32
	csts  uint32
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
	status uint16          // answer with this status (SCT<<8 | SC)
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
func (ft *fakeTarget) setHook(hook func(qid uint16, sqe []byte) fault) {
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
	pd := req.PrivateData()
	if ft.reject {
		req.Reject([]byte{0, 0, 6, 0})
		return
	}
	if len(pd) < 32 {
		req.Reject([]byte{0, 0, 1, 0})
		return
	}
	le := binary.LittleEndian
	qid, hrq, hsq := le.Uint16(pd[2:]), int(le.Uint16(pd[4:])), int(le.Uint16(pd[6:]))
	nrecv := hsq + 1
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
	rep := make([]byte, 32)
	le.PutUint16(rep[2:], uint16(nrecv))
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
	sqe := capsule[:sqeLen]
	f := fault{}
	s.ft.mu.Lock()
	hook := s.ft.hook
	s.ft.mu.Unlock()
	if hook != nil {
		f = hook(s.qid, sqe)
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
		dw0, dw1, status = s.exec(sqe, capsule[sqeLen:])
	}
	s.sqhd++
	b := s.rsp.Bytes()
	le := binary.LittleEndian
	le.PutUint32(b[0:], dw0)
	le.PutUint32(b[4:], dw1)
	le.PutUint16(b[8:], s.sqhd)
	le.PutUint16(b[10:], s.qid)
	le.PutUint16(b[12:], le.Uint16(sqe[2:])^f.cidXor)
	le.PutUint16(b[14:], status<<1)
	return s.qp.Send(s.ft.ctx, s.rsp.SGE(0, cqeLen)) == nil
}

// pull fetches a command's host-to-controller data.
func (s *fakeQueue) pull(sqe, inline []byte) ([]byte, error) {
	le := binary.LittleEndian
	if sqe[39] == sglInlineData {
		n := int(le.Uint32(sqe[32:]))
		s.ft.mu.Lock()
		s.ft.inCap++
		s.ft.mu.Unlock()
		if n > len(inline) {
			return nil, errors.New("short in-capsule data")
		}
		return inline[:n], nil
	}
	n := int(sqe[32]) | int(sqe[33])<<8 | int(sqe[34])<<16
	if n > s.data.Len() {
		return nil, errors.New("too long")
	}
	remote := iwarp.RemoteBuffer{STag: le.Uint32(sqe[35:]), TO: le.Uint64(sqe[24:]), Len: uint32(n)}
	if err := s.qp.Read(s.ft.ctx, s.data.SGE(0, n), remote); err != nil {
		return nil, err
	}
	return s.data.Bytes()[:n], nil
}

// push sends p to the host buffer a command's keyed SGL names.
func (s *fakeQueue) push(sqe, p []byte) error {
	n := min(len(p), int(sqe[32])|int(sqe[33])<<8|int(sqe[34])<<16)
	copy(s.data.Bytes(), p[:n])
	return s.pushData(sqe, n)
}

// pushData sends the first n bytes of the queue's data buffer to the host
// buffer a command's keyed SGL names.
func (s *fakeQueue) pushData(sqe []byte, n int) error {
	le := binary.LittleEndian
	remote := iwarp.RemoteBuffer{STag: le.Uint32(sqe[35:]), TO: le.Uint64(sqe[24:]), Len: uint32(n)}
	return s.qp.Write(s.ft.ctx, remote, s.data.SGE(0, n))
}
