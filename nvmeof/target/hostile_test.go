package target

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// The target against hosts that break the rules: every bad input gets
// the status the specifications name, or costs the misbehaving queue its
// connection, never the target a panic or a hang, and the other queues
// keep being served.

// wantGone waits until the target has closed h's connection.
func wantGone(t *testing.T, h *rawHost, what string) {
	t.Helper()
	select {
	case <-h.qp.Done():
	case <-h.ctx.Done():
		t.Fatalf("%s: the target kept the connection", what)
	}
}

// stillServes checks that the controller of admin queue a still answers.
func stillServes(t *testing.T, a *rawHost) {
	t.Helper()
	wantStatus(t, "Keep Alive on another queue", a.exec(nvme.Command{Opcode: nvme.AdminKeepAlive, Flags: nvme.FlagSGL}, nil).Status, nvme.StatusSuccess)
}

// TestHostileConnectionRequest: bad RDMA_CM private data is rejected with
// the transport's status.
func TestHostileConnectionRequest(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	req := func(qid, hrq, hsq uint16) []byte {
		b := make([]byte, nvme.CMRequestLen)
		r := nvme.CMRequest{QID: qid, HRQSIZE: hrq, HSQSIZE: hsq}
		r.Encode(b)
		return b
	}
	badFmt := req(0, 32, 31)
	badFmt[0] = 1
	for _, c := range []struct {
		name string
		priv []byte
		want nvme.CMStatus
	}{
		{"short", []byte{0, 0, 0, 0}, nvme.CMInvalidLength},
		{"empty", []byte{}, nvme.CMInvalidLength},
		{"RECFMT", badFmt, nvme.CMInvalidRECFMT},
		{"QID", req(DefaultMaxIOQueues+1, 128, 127), nvme.CMInvalidQID},
		{"HSQSIZE 0", req(1, 128, 0), nvme.CMInvalidHSQSIZE},
		{"admin HSQSIZE", req(0, 64, 63), nvme.CMInvalidHSQSIZE},
		{"I/O HSQSIZE", req(1, 1024, DefaultQueueDepth), nvme.CMInvalidHSQSIZE},
		{"HRQSIZE", req(1, 16, 127), nvme.CMInvalidHRQSIZE},
	} {
		_, err := dial(t, tt.addr, 0, &dialOpts{priv: c.priv})
		var rej *iwarp.RejectedError
		if !errors.As(err, &rej) {
			t.Errorf("%s: connect error %v, want a rejection", c.name, err)
			continue
		}
		r, derr := nvme.DecodeCMReject(rej.PrivateData)
		if derr != nil || r.STS != c.want {
			t.Errorf("%s: rejected with %v (%v), want %v", c.name, r.STS, derr, c.want)
		}
	}
}

// TestHostileBeforeConnect: only Connect runs on a queue not connected.
func TestHostileBeforeConnect(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	h := mustDial(t, tt.addr, 0, nil)
	rc := h.exec(nvme.Identify{CNS: nvme.CNSController}.Command(0, 0, h.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify before Connect", rc.Status, nvme.StatusCommandSequenceError)
	_, st := h.propGet(nvme.PropCAP)
	wantStatus(t, "Property Get before Connect", st, nvme.StatusCommandSequenceError)
	io := mustDial(t, tt.addr, 1, nil)
	rc = io.exec(nvme.RW{NLB: 0}.Command(nvme.NVMRead, 0, 1, io.keyed(0, 512)), nil)
	wantStatus(t, "Read before Connect", rc.Status, nvme.StatusCommandSequenceError)
	// The queue still takes its Connect afterwards.
	wantStatus(t, "Connect", h.connect(testNQN, nvme.CNTLIDDynamic, 31, 0, false).Status, nvme.StatusSuccess)
	// Admin commands need CC.EN and CSTS.RDY.
	rc = h.exec(nvme.Identify{CNS: nvme.CNSController}.Command(0, 0, h.keyed(0, nvme.IdentifyLen)), nil)
	wantStatus(t, "Identify before CC.EN", rc.Status, nvme.StatusCommandSequenceError)
}

// TestHostileConnect: Connect with bad fields names the field.
func TestHostileConnect(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	type want struct {
		st     nvme.Status
		ipo    uint16
		inData bool
	}
	check := func(name string, rc nvme.Completion, w want) {
		t.Helper()
		wantStatus(t, name, rc.Status, w.st)
		if w.st == nvme.StatusConnectInvalidParameters {
			if p := nvme.ParseInvalidParam(rc.DW0); p.IPO != w.ipo || p.InData != w.inData {
				t.Errorf("%s: %+v, want IPO %d in data %v", name, p, w.ipo, w.inData)
			}
		}
	}
	inv := func(ipo uint16, inData bool) want { return want{nvme.StatusConnectInvalidParameters, ipo, inData} }
	send := func(h *rawHost, k nvme.Connect, d nvme.ConnectData) nvme.Completion {
		b := make([]byte, nvme.ConnectDataLen)
		d.Encode(b)
		copy(h.data.Bytes(), b)
		return h.exec(k.Command(0, h.keyed(0, nvme.ConnectDataLen)), nil)
	}
	good := nvme.ConnectData{CNTLID: nvme.CNTLIDDynamic, SUBNQN: testNQN, HOSTNQN: testHostNQN}
	h := mustDial(t, tt.addr, 0, nil)
	check("RECFMT", send(h, nvme.Connect{RECFMT: 1, SQSIZE: 31}, good), want{st: nvme.StatusConnectIncompatibleFormat})
	check("QID", send(h, nvme.Connect{QID: 1, SQSIZE: 31}, good), inv(nvme.ConnectOffQID, false))
	check("SQSIZE 0", send(h, nvme.Connect{SQSIZE: 0}, good), inv(nvme.ConnectOffSQSIZE, false))
	check("SQSIZE above the receives", send(h, nvme.Connect{SQSIZE: 32}, good), inv(nvme.ConnectOffSQSIZE, false))
	check("admin SQSIZE below 32", send(h, nvme.Connect{SQSIZE: 15}, good), inv(nvme.ConnectOffSQSIZE, false))
	d := good
	d.SUBNQN = "nqn.2024-01.org.goiwarp:other"
	check("SUBNQN", send(h, nvme.Connect{SQSIZE: 31}, d), inv(nvme.ConnectDataOffSUBNQN, true))
	d = good
	d.HOSTNQN = ""
	check("HOSTNQN", send(h, nvme.Connect{SQSIZE: 31}, d), inv(nvme.ConnectDataOffHOSTNQN, true))
	d = good
	d.CNTLID = 7
	check("admin CNTLID", send(h, nvme.Connect{SQSIZE: 31}, d), inv(nvme.ConnectDataOffCNTLID, true))
	// An NQN without its NUL.
	b := make([]byte, nvme.ConnectDataLen)
	good.Encode(b)
	for i := nvme.ConnectDataOffSUBNQN; i < nvme.ConnectDataOffSUBNQN+nvme.NQNFieldLen; i++ {
		b[i] = 'x'
	}
	copy(h.data.Bytes(), b)
	check("SUBNQN unterminated", h.exec(nvme.Connect{SQSIZE: 31}.Command(0, h.keyed(0, nvme.ConnectDataLen)), nil),
		inv(nvme.ConnectDataOffSUBNQN, true))
	// The Connect data's length must be 1024.
	check("short data", h.exec(nvme.Connect{SQSIZE: 31}.Command(0, h.keyed(0, 512)), nil), want{st: nvme.StatusDataSGLLengthInvalid})

	// After all that the queue still connects, and only once.
	check("Connect", send(h, nvme.Connect{SQSIZE: 31}, good), want{st: nvme.StatusSuccess})
	check("second Connect", send(h, nvme.Connect{SQSIZE: 31}, good), want{st: nvme.StatusCommandSequenceError})
	cntlid := uint16(1)

	io := mustDial(t, tt.addr, 1, nil)
	d = good
	d.CNTLID = cntlid
	check("I/O Connect before CC.EN", send(io, nvme.Connect{QID: 1, SQSIZE: 127}, d), want{st: nvme.StatusCommandSequenceError})
	cc := nvme.CC{EN: true, IOSQES: 6, IOCQES: 4}
	wantStatus(t, "CC.EN", h.propSet(nvme.PropCC, cc.Uint32()), nvme.StatusSuccess)
	d.CNTLID = 0x1234
	check("I/O Connect to an unknown controller", send(io, nvme.Connect{QID: 1, SQSIZE: 127}, d), inv(nvme.ConnectDataOffCNTLID, true))
	d.CNTLID = cntlid
	d.HOSTNQN = testHostNQN + ".other"
	check("I/O Connect of another host", send(io, nvme.Connect{QID: 1, SQSIZE: 127}, d), inv(nvme.ConnectDataOffCNTLID, true))
	d.HOSTNQN = testHostNQN
	check("I/O SQSIZE above MQES", send(io, nvme.Connect{QID: 1, SQSIZE: DefaultQueueDepth}, d), inv(nvme.ConnectOffSQSIZE, false))
	check("I/O Connect", send(io, nvme.Connect{QID: 1, SQSIZE: 127}, d), want{st: nvme.StatusSuccess})
	io2 := mustDial(t, tt.addr, 1, nil)
	check("I/O QID taken", send(io2, nvme.Connect{QID: 1, SQSIZE: 127}, d), want{st: nvme.StatusCommandSequenceError})
	// Number of Queues bounds the QIDs an I/O Connect may name, and can
	// no longer be set once I/O queues exist.
	rc := h.exec(nvme.Feature{FID: nvme.FeatNumQueues, Value: 0}.SetCommand(0, 0), nil)
	wantStatus(t, "Number of Queues with an I/O queue", rc.Status, nvme.StatusCommandSequenceError)
}

// TestHostileCommands: commands a controller does not run, or with
// fields it cannot take.
func TestHostileCommands(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	read := func(slba uint64, nlb uint16, d nvme.SGL) nvme.Command {
		return nvme.RW{SLBA: slba, NLB: nlb}.Command(nvme.NVMRead, 0, 1, d)
	}
	segment := q.keyed(0, 512)
	segment[15] = nvme.SGLTypeSegment << 4
	badSub := q.keyed(0, 512)
	badSub[15] = nvme.SGLTypeKeyedDataBlock<<4 | 5
	fused := read(0, 0, q.keyed(0, 512))
	fused.Flags |= nvme.FlagFuseFirst
	prp := read(0, 0, q.keyed(0, 512))
	prp.Flags = 0
	wrongNS := read(0, 0, q.keyed(0, 512))
	wrongNS.NSID = 2
	for _, c := range []struct {
		name   string
		h      *rawHost
		cmd    nvme.Command
		inline []byte
		want   nvme.Status
	}{
		{"unknown I/O opcode", q, nvme.Command{Opcode: 0x7E, Flags: nvme.FlagSGL, NSID: 1}, nil, nvme.StatusInvalidOpcode},
		{"Compare", q, nvme.Command{Opcode: nvme.NVMCompare, Flags: nvme.FlagSGL, NSID: 1}, nil, nvme.StatusInvalidOpcode},
		{"admin opcode on an I/O queue", q, nvme.Command{Opcode: nvme.AdminIdentify, Flags: nvme.FlagSGL}, nil, nvme.StatusInvalidOpcode},
		{"unknown admin opcode", a, nvme.Command{Opcode: 0xC0, Flags: nvme.FlagSGL}, nil, nvme.StatusInvalidOpcode},
		{"Create I/O SQ", a, nvme.Command{Opcode: nvme.AdminCreateSQ, Flags: nvme.FlagSGL}, nil, nvme.StatusInvalidOpcode},
		{"Property Get on an I/O queue", q, nvme.PropertyGetCommand(0, nvme.PropCSTS, 4), nil, nvme.StatusInvalidOpcode},
		{"unknown Fabrics type", a, nvme.Command{Opcode: nvme.AdminFabrics, Flags: nvme.FlagSGL, NSID: 0x7C}, nil, nvme.StatusInvalidOpcode},
		{"fused", q, fused, nil, nvme.StatusInvalidField},
		{"PRP", q, prp, nil, nvme.StatusInvalidField},
		{"namespace 2", q, wrongNS, nil, nvme.StatusInvalidNamespace},
		{"LBA out of range", q, read(2047, 1, q.keyed(0, 1024)), nil, nvme.StatusLBAOutOfRange},
		{"LBA far out of range", q, read(1<<63, 0, q.keyed(0, 512)), nil, nvme.StatusLBAOutOfRange},
		{"above MDTS", q, read(0, 511, q.keyed(0, 256<<10)), nil, nvme.StatusInvalidField},
		{"SGL shorter than NLB", q, read(0, 1, q.keyed(0, 512)), nil, nvme.StatusDataSGLLengthInvalid},
		{"SGL longer than NLB", q, read(0, 0, q.keyed(0, 1024)), nil, nvme.StatusDataSGLLengthInvalid},
		{"SGL segment", q, read(0, 0, segment), nil, nvme.StatusSGLTypeInvalid},
		{"keyed subtype 5", q, read(0, 0, badSub), nil, nvme.StatusInvalidField},
		{"in-capsule Read", q, read(0, 0, nvme.InlineSGL(0, 512)), make([]byte, 512), nvme.StatusInvalidField},
		{"in-capsule past the data", q, nvme.RW{NLB: 0}.Command(nvme.NVMWrite, 0, 1, nvme.InlineSGL(0, 512)), make([]byte, 100), nvme.StatusDataSGLLengthInvalid},
		{"in-capsule offset past the data", q, nvme.RW{NLB: 0}.Command(nvme.NVMWrite, 0, 1, nvme.InlineSGL(4096, 512)), make([]byte, 512), nvme.StatusSGLOffsetInvalid},
		{"in-capsule on the admin queue", a, nvme.Feature{FID: nvme.FeatHostID, Value: 1}.GetCommand(0, 0), nil, nvme.StatusSuccess},
		{"Identify CNS 0x10", a, nvme.Identify{CNS: nvme.CNSAllocatedNSList}.Command(0, 0, a.keyed(0, 4096)), nil, nvme.StatusInvalidField},
		{"Identify namespace 0", a, nvme.Identify{CNS: nvme.CNSNamespace}.Command(0, 0, a.keyed(0, 4096)), nil, nvme.StatusInvalidNamespace},
		{"Identify namespace 9", a, nvme.Identify{CNS: nvme.CNSNamespace}.Command(0, 9, a.keyed(0, 4096)), nil, nvme.StatusInvalidNamespace},
		{"Property Get of a reserved offset", a, nvme.PropertyGetCommand(0, 0x40, 4), nil, nvme.StatusInvalidField},
		{"Property Get CAP as 4 bytes", a, nvme.PropertyGetCommand(0, nvme.PropCAP, 4), nil, nvme.StatusInvalidField},
		{"Property Set CAP", a, nvme.PropertySetCommand(0, nvme.PropCAP, 8, 0), nil, nvme.StatusInvalidField},
		{"Property Set NSSR", a, nvme.PropertySetCommand(0, nvme.PropNSSR, 4, uint64(nvme.NSSRReset)), nil, nvme.StatusInvalidField},
		{"unknown log page", a, nvme.GetLogPage{LID: 0x42, NUMD: 127}.Command(0, 0, a.keyed(0, 512)), nil, nvme.StatusInvalidLogPage},
		{"discovery log on an I/O controller", a, nvme.GetLogPage{LID: nvme.LogDiscovery, NUMD: 255}.Command(0, 0, a.keyed(0, 1024)), nil, nvme.StatusInvalidLogPage},
		{"log offset not dword aligned", a, nvme.GetLogPage{LID: nvme.LogSMART, NUMD: 0, Offset: 2}.Command(0, 0, a.keyed(0, 4)), nil, nvme.StatusInvalidField},
		{"log offset past the page", a, nvme.GetLogPage{LID: nvme.LogSMART, NUMD: 0, Offset: 516}.Command(0, 0, a.keyed(0, 4)), nil, nvme.StatusInvalidField},
		{"unknown feature", a, nvme.Feature{FID: 0x7A}.GetCommand(0, 0), nil, nvme.StatusInvalidField},
		{"saving a feature", a, nvme.Feature{FID: nvme.FeatArbitration, SV: true}.SetCommand(0, 0), nil, nvme.StatusFeatureNotSaveable},
		{"Number of Queues 65536", a, nvme.Feature{FID: nvme.FeatNumQueues, Value: 0xFFFF}.SetCommand(0, 0), nil, nvme.StatusInvalidField},
	} {
		cmd := c.cmd
		if c.name == "in-capsule on the admin queue" { // 16 bytes of data in a 64-byte capsule queue
			cmd.DPTR = nvme.InlineSGL(0, 16)
			c.want = nvme.StatusInvalidField
		}
		wantStatus(t, c.name, c.h.exec(cmd, c.inline).Status, c.want)
	}
	stillServes(t, a)
	wantStatus(t, "Read after all that", q.exec(read(0, 0, q.keyed(0, 512)), nil).Status, nvme.StatusSuccess)
}

// TestHostileGarbage: random capsules get an answer with their CID (or,
// for an SQE too short to have one, cost the queue its connection); the
// controller goes on.
func TestHostileGarbage(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	q := ioQueue(t, tt.addr, 1, cntlid)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		h := q
		if i%3 == 0 {
			h = a
		}
		n := nvme.SQELen
		if h == q {
			n += rng.IntN(64) // in-capsule data (the admin queue takes none)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if b[0] == nvme.AdminFabrics && b[4] == nvme.FCTypePropertySet {
			b[4] = nvme.FCTypePropertyGet // a random CC could shut the controller down
		}
		if b[0] == nvme.AdminSetFeatures && b[40] == nvme.FeatKeepAlive {
			b[40] = nvme.FeatArbitration // a random KATO could expire during the test
		}
		if b[0] == nvme.AdminAsyncEvent && h == a {
			b[0] = nvme.AdminKeepAlive // held without an answer
		}
		h.cid++
		le.PutUint16(b[2:], h.cid)
		h.sendRaw(b)
		rc, _ := h.next()
		if rc.CID != h.cid {
			t.Fatalf("garbage %d: response for CID %d, want %d", i, rc.CID, h.cid)
		}
	}
	stillServes(t, a)
	short := mustDial(t, tt.addr, 2, nil)
	short.sendRaw(make([]byte, 10))
	wantGone(t, short, "a 10-byte capsule")
	stillServes(t, a)
	wantStatus(t, "Flush", q.exec(nvme.Command{Opcode: nvme.NVMFlush, Flags: nvme.FlagSGL, NSID: 1}, nil).Status, nvme.StatusSuccess)
}

// TestHostileTransport: a host whose keyed SGLs name memory it does not
// have, that sends capsules larger than the queue takes, or more than it
// may, loses that queue; its other queues and other hosts go on.
func TestHostileTransport(t *testing.T) {
	tt := newTestTarget(t, 1<<20, nil)
	a, cntlid := admin(t, tt.addr, testNQN)
	other, _ := admin(t, tt.addr, testNQN)
	cases := []func(q *rawHost){
		func(q *rawHost) { // a Write whose data is beyond the host's region: the RDMA Read fails
			q.submit(nvme.RW{NLB: 0}.Command(nvme.NVMWrite, 0, 1, nvme.KeyedSGL(hostDataLen, 512, q.data.STag())), nil)
		},
		func(q *rawHost) { // a Read into a key the host does not have: the RDMA Write fails
			q.submit(nvme.RW{NLB: 0}.Command(nvme.NVMRead, 0, 1, nvme.KeyedSGL(0, 512, q.data.STag()^0xFF)), nil)
		},
		func(q *rawHost) { // a capsule larger than the receive buffers
			q.sendRaw(make([]byte, nvme.SQELen+DefaultInlineDataSize+16))
		},
	}
	for i, send := range cases {
		q := ioQueue(t, tt.addr, uint16(i+1), cntlid)
		send(q)
		wantGone(t, q, "case "+string(rune('0'+i)))
		stillServes(t, a)
		stillServes(t, other)
	}
	// More Sends than receives: HSQSIZE+1 commands that are held, then one
	// more.
	q := mustDial(t, tt.addr, 0, &dialOpts{hsq: 32})
	wantStatus(t, "Connect", q.connect(testNQN, nvme.CNTLIDDynamic, 31, 0, false).Status, nvme.StatusSuccess)
	for range 40 {
		q.cid++
		cmd := nvme.Command{Opcode: nvme.AdminKeepAlive, Flags: nvme.FlagSGL, CID: q.cid}
		b := make([]byte, nvme.SQELen)
		cmd.Encode(b)
		copy(q.cap.Bytes(), b)
		if q.qp.PostSend(iwarp.SendWR{Op: iwarp.OpSend, SGL: []iwarp.SGE{q.cap.SGE(0, nvme.SQELen)}}) != nil {
			break
		}
	}
	stillServes(t, a)
}
