package nvme

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// unhex decodes a hex string with spaces and newlines for readability.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A Connect for the admin queue as Linux's nvme-rdma host sends it: opcode
// 0x7F, PSDT 01b (0x40), CID 0, FCTYPE 1, a Keyed SGL Data Block of 1024
// octets (address 0x1000, key 0x12345678), RECFMT 0, QID 0, SQSIZE 31,
// KATO 5000 ms.
const goldenConnect = `
7f 40 0000 01 000000 00000000 00000000 0000000000000000
0010000000000000 000400 78563412 40
0000 0000 1f00 00 00 88130000 00000000 00000000 00000000`

func TestGoldenConnectCommand(t *testing.T) {
	b := unhex(t, goldenConnect)
	if len(b) != SQELen {
		t.Fatalf("golden vector is %d octets", len(b))
	}
	c, err := DecodeCommand(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Opcode != AdminFabrics || c.FCType() != FCTypeConnect || c.CheckFlags() != StatusSuccess {
		t.Fatalf("opcode %#x fctype %#x flags %#x", c.Opcode, c.FCType(), c.Flags)
	}
	k := c.Connect()
	if k != (Connect{RECFMT: 0, QID: 0, SQSIZE: 31, KATO: 5000}) {
		t.Fatalf("Connect = %+v", k)
	}
	kind, st := c.DPTR.Classify()
	if kind != SGLKeyed || st != StatusSuccess || c.DPTR.Address() != 0x1000 ||
		c.DPTR.Length() != 1024 || c.DPTR.Key() != 0x12345678 {
		t.Fatalf("DPTR %x: kind %d %v addr %#x len %d key %#x", c.DPTR, kind, st,
			c.DPTR.Address(), c.DPTR.Length(), c.DPTR.Key())
	}
	if c.DataDirection() != DirHostToCtrl {
		t.Errorf("direction %d", c.DataDirection())
	}
	// Built from fields, it is the same octets.
	built := k.Command(0, KeyedSGL(0x1000, 1024, 0x12345678))
	out := make([]byte, SQELen)
	if err := built.Encode(out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) {
		t.Fatalf("encoded\n%x\nwant\n%x", out, b)
	}
}

func TestConnectDataRoundTrip(t *testing.T) {
	d := ConnectData{CNTLID: CNTLIDDynamic, SUBNQN: "nqn.2014-08.org.example:sub", HOSTNQN: "nqn.2014-08.org.nvmexpress:uuid:1"}
	copy(d.HOSTID[:], "0123456789abcdef")
	b := make([]byte, ConnectDataLen)
	if err := d.Encode(b); err != nil {
		t.Fatal(err)
	}
	if b[16] != 0xFF || b[17] != 0xFF || string(b[256:256+len(d.SUBNQN)]) != d.SUBNQN ||
		string(b[512:512+len(d.HOSTNQN)]) != d.HOSTNQN || string(b[:16]) != "0123456789abcdef" {
		t.Fatalf("layout wrong: %x", b[:32])
	}
	got, err := DecodeConnectData(b)
	if err != nil || got != d {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	for i := 256; i < 512; i++ {
		b[i] = 'x'
	}
	if _, err := DecodeConnectData(b); !errors.Is(err, ErrNQNUnterminated) {
		t.Fatalf("unterminated: %v", err)
	}
	if _, err := DecodeConnectData(b[:1023]); err == nil {
		t.Fatal("short data decoded")
	}
}

func TestCompletionGolden(t *testing.T) {
	// A Connect response: CNTLID 1 in DW0, SQHD 1, SQID 0, CID 7, status
	// success, phase 0.
	b := unhex(t, "01000000 00000000 0100 0000 0700 0000")
	c, err := DecodeCompletion(b)
	if err != nil {
		t.Fatal(err)
	}
	if ParseConnectResponse(c.DW0).CNTLID != 1 || c.SQHD != 1 || c.CID != 7 || !c.Status.Success() {
		t.Fatalf("%+v", c)
	}
	// LBA Out of Range with DNR: status field 0x4080, on the wire 0x8100.
	c = Completion{CID: 0x1234, Status: StatusLBAOutOfRange.WithDNR()}
	out := make([]byte, CQELen)
	if err := c.Encode(out); err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "00000000 00000000 0000 0000 3412 0081"); !bytes.Equal(out, want) {
		t.Fatalf("encoded %x want %x", out, want)
	}
	back, _ := DecodeCompletion(out)
	if back != c || back.Status.Code() != StatusLBAOutOfRange || !back.Status.DNR() {
		t.Fatalf("round trip %+v", back)
	}
	if s := back.Status.String(); s != "LBA Out of Range (DNR)" {
		t.Errorf("String = %q", s)
	}
}

func TestStatusFields(t *testing.T) {
	s := StatusConnectInvalidHost | StatusDNR | StatusMore | 2<<11
	if s.SCT() != SCTCommandSpecific || s.SC() != 0x84 || !s.DNR() || !s.More() || s.CRD() != 2 {
		t.Fatalf("%#x: sct %d sc %#x", uint16(s), s.SCT(), s.SC())
	}
	if MakeStatus(2, 0x81) != StatusUnrecoveredReadError {
		t.Fatal("MakeStatus")
	}
	if got := MakeStatus(0, 0x7e).String(); got != "SCT 0 SC 0x7e" {
		t.Errorf("unknown status String = %q", got)
	}
}

func TestSGLClassify(t *testing.T) {
	for _, c := range []struct {
		d    SGL
		kind SGLKind
		st   Status
	}{
		{KeyedSGL(1, 2, 3), SGLKeyed, StatusSuccess},
		{KeyedSGLInvalidate(1, 2, 3), SGLKeyedInvalidate, StatusSuccess},
		{InlineSGL(0, 4096), SGLInCapsule, StatusSuccess},
		{SGL{15: SGLTypeDataBlock << 4}, SGLInvalid, StatusInvalidField},
		{SGL{15: SGLTypeKeyedDataBlock<<4 | SGLSubOffset}, SGLInvalid, StatusInvalidField},
		{SGL{15: SGLTypeSegment << 4}, SGLInvalid, StatusSGLTypeInvalid},
		{SGL{15: SGLTypeLastSegment << 4}, SGLInvalid, StatusSGLTypeInvalid},
		{SGL{15: SGLTypeBitBucket << 4}, SGLInvalid, StatusSGLTypeInvalid},
		{SGL{15: 0xE0}, SGLInvalid, StatusSGLTypeInvalid},
	} {
		kind, st := c.d.Classify()
		if kind != c.kind || st != c.st {
			t.Errorf("%x: %d %v, want %d %v", c.d, kind, st, c.kind, c.st)
		}
	}
	d := KeyedSGL(0x1122334455667788, 0xABCDEF, 0xDEADBEEF)
	if want := unhex(t, "8877665544332211 efcdab efbeadde 40"); !bytes.Equal(d[:], want) {
		t.Fatalf("keyed %x want %x", d, want)
	}
	in := InlineSGL(16, 100)
	if in.CheckInCapsule(116) != StatusSuccess || in.CheckInCapsule(115) != StatusDataSGLLengthInvalid ||
		in.CheckInCapsule(8) != StatusSGLOffsetInvalid {
		t.Fatal("CheckInCapsule")
	}
}

func TestCMPrivateData(t *testing.T) {
	// A request for I/O queue 1: HRQSIZE 128, HSQSIZE 127, CNTLID 1.
	b := unhex(t, "0000 0100 8000 7f00 0100"+strings.Repeat("00", 22))
	r, err := DecodeCMRequest(b)
	if err != nil || r != (CMRequest{QID: 1, HRQSIZE: 128, HSQSIZE: 127, CNTLID: 1}) {
		t.Fatalf("%+v %v", r, err)
	}
	out := make([]byte, CMRequestLen)
	if err := r.Encode(out); err != nil || !bytes.Equal(out, b) {
		t.Fatalf("%x %v", out, err)
	}
	if _, err := DecodeCMRequest(b[:31]); err != CMInvalidLength {
		t.Fatalf("short: %v", err)
	}
	b[0] = 1
	if _, err := DecodeCMRequest(b); err != CMInvalidRECFMT {
		t.Fatalf("recfmt: %v", err)
	}
	rep := CMReply{CRQSIZE: 128}
	out = make([]byte, CMReplyLen)
	_ = rep.Encode(out)
	if got, err := DecodeCMReply(out); err != nil || got != rep || out[2] != 0x80 {
		t.Fatalf("reply %+v %v", got, err)
	}
	rej := CMReject{STS: CMInvalidHSQSIZE}
	out = make([]byte, CMRejectLen)
	_ = rej.Encode(out)
	if got, err := DecodeCMReject(out); err != nil || got != rej || !bytes.Equal(out, []byte{0, 0, 4, 0}) {
		t.Fatalf("reject %+v %v %x", got, err, out)
	}
	if CMNoResources.String() != "no resources" || CMStatus(0x42).String() != "status 0x0042" {
		t.Error("CMStatus names")
	}
}

func TestProperties(t *testing.T) {
	// CAP as Linux's nvmet gives it: MQES 1023, CQR, TO 15, CSS NVM,
	// MPSMIN 0, MPSMAX 0.
	cap := CAP{MQES: 1023, CQR: true, TO: 15, CSS: CSSNVM}
	if v := cap.Uint64(); v != 0x0000_0020_0f01_03ff {
		t.Fatalf("CAP = %#x", v)
	}
	if ParseCAP(cap.Uint64()) != cap {
		t.Fatal("CAP round trip")
	}
	cc := CC{EN: true, IOSQES: 6, IOCQES: 4}
	if cc.Uint32() != 0x00460001 || ParseCC(0x00460001) != cc {
		t.Fatalf("CC = %#x", cc.Uint32())
	}
	if ParseCC(0x4001).SHN != SHNNormal {
		t.Fatal("SHN")
	}
	st := CSTS{RDY: true, SHST: SHSTComplete}
	if st.Uint32() != 9 || ParseCSTS(9) != st {
		t.Fatal("CSTS")
	}
	if Version1_3.String() != "1.3" || MakeVersion(1, 4, 1).String() != "1.4.1" {
		t.Fatal("Version")
	}
	c := PropertySetCommand(5, PropCC, 4, 0x460001)
	p := c.Property()
	if c.FCType() != FCTypePropertySet || p.Size() != 4 || p.OFST != PropCC || p.VALUE != 0x460001 {
		t.Fatalf("%+v", p)
	}
	if g := PropertyGetCommand(6, PropCAP, 8).Property(); g.Size() != 8 || g.OFST != 0 {
		t.Fatalf("%+v", g)
	}
}

func TestShortBuffers(t *testing.T) {
	var c Command
	var q Completion
	if c.Encode(make([]byte, 63)) == nil || c.Decode(nil) == nil || q.Encode(nil) == nil || q.Decode(make([]byte, 15)) == nil {
		t.Fatal("short buffer accepted")
	}
	var le *LengthError
	if _, err := DecodeCommand(nil); !errors.As(err, &le) || le.Need != SQELen {
		t.Fatalf("%v", err)
	}
}

func TestNamesAndCDW(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{OpcodeName(AdminIdentify, true), "Identify"},
		{OpcodeName(NVMRead, false), "Read"},
		{OpcodeName(0x7e, true), "opcode 0x7e"},
		{FCTypeName(FCTypeConnect), "Connect"},
		{FeatureName(FeatKeepAlive), "Keep Alive Timer"},
		{LogName(0x42), "log page 0x42"},
		{StatusConnectInvalidParameters.String(), "Connect Invalid Parameters"},
		{StatusInvalidNamespace.WithDNR().String(), "Invalid Namespace or Format (DNR)"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	var c Command
	for n := 10; n <= 15; n++ {
		c.SetCDW(n, uint32(n))
	}
	c.SetCDW(9, 99)
	if c.CDW10 != 10 || c.CDW15 != 15 || c.CDW(12) != 12 || c.CDW(16) != 0 {
		t.Fatalf("%+v", c)
	}
}
