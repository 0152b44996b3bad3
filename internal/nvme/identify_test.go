package nvme

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// TestGoldenIdentifyController checks fields at the octets NVMe Base 1.4
// Figure 247 and NVMe-oF 1.1 Figure 28 give them.
func TestGoldenIdentifyController(t *testing.T) {
	c := Controller{
		VID: 0x1234, SSVID: 0x5678, SN: "SN0001", MN: "goiwarp", FR: "6.1",
		RAB: 6, IEEE: [3]byte{0x11, 0x22, 0x33}, CMIC: CMICMultiCtrl | CMICANA, MDTS: 5, CNTLID: 0x0042,
		VER: Version1_3, OAES: OAESNSAttr, CTRATT: CTRATTHostID128, CNTRLTYPE: CtrlTypeIO,
		ACL: 3, AERL: 3, FRMW: 3, LPA: LPACmdEffects | LPAExtended, ELPE: 127, KAS: 50,
		SQES: SQESNVM, CQES: CQESNVM, MAXCMD: 128, NN: 1024,
		ONCS: ONCSDSM | ONCSWriteZeroes, VWC: VWCPresent | VWCFlushNSAll,
		SGLS: SGLSSupported | SGLSKeyed | SGLSOffset, SUBNQN: "nqn.2014-08.org.example:sub",
		IOCCSZ: (64 + 8192) / 16, IORCSZ: 1, MSDBD: 1, OFCS: OFCSDisconnect,
	}
	c.PSD[0] = PowerState{MP: 0x09c4, ENLAT: 16, EXLAT: 4}
	b := make([]byte, IdentifyLen)
	if err := c.Encode(b); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	checks := []struct {
		off  int
		want []byte
	}{
		{0, []byte{0x34, 0x12, 0x78, 0x56}},
		{4, []byte("SN0001              goiwarp ")},
		{64, []byte("6.1     \x06\x11\x22\x33\x0a\x05\x42\x00\x00\x03\x01\x00")},
		{92, []byte{0, 1, 0, 0, 1, 0, 0, 0}},
		{111, []byte{1}},
		{258, []byte{3, 3, 3, 6, 127}},
		{320, []byte{50, 0}},
		{512, []byte{0x66, 0x44, 128, 0, 0, 4, 0, 0, 0x0c, 0, 0, 0, 0, 7}},
		{536, []byte{0x05, 0, 0x10, 0}},
		{768, []byte("nqn.2014-08.org.example:sub\x00")},
		{1792, []byte{0x04, 0x02, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0}},
		{2048, []byte{0xc4, 0x09, 0, 0, 16, 0, 0, 0, 4, 0, 0, 0}},
	}
	for _, ck := range checks {
		if got := b[ck.off : ck.off+len(ck.want)]; !bytes.Equal(got, ck.want) {
			t.Errorf("offset %d: % x, want % x", ck.off, got, ck.want)
		}
	}
	if le.Uint32(b[80:]) != 0x00010300 {
		t.Errorf("VER at 80: %#x", le.Uint32(b[80:]))
	}
	got, err := DecodeController(b)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip:\n%+v\n%+v %v", got, c, err)
	}
	if c.MaxTransfer(0) != 128<<10 {
		t.Errorf("MaxTransfer = %d", c.MaxTransfer(0))
	}
	if _, err := DecodeController(b[:4095]); err == nil {
		t.Error("short page decoded")
	}
}

func TestGoldenIdentifyNamespace(t *testing.T) {
	n := Namespace{NSZE: 0x200000, NCAP: 0x200000, NUSE: 0x100000, NSFEAT: NSFEATThin, NLBAF: 1,
		FLBAS: 1, NMIC: NMICShared, DLFEAT: DLFEATZeroes | DLFEATWZDeac,
		NGUID: [16]byte{0: 0xAA, 15: 0xBB}, EUI64: [8]byte{0: 0xCC, 7: 0xDD}}
	n.LBAF[0] = LBAFormat{LBADS: 9}
	n.LBAF[1] = LBAFormat{LBADS: 12, RP: 1}
	b := make([]byte, IdentifyLen)
	if err := n.Encode(b); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		off  int
		want []byte
	}{
		{0, []byte{0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0x10, 0}},
		{24, []byte{1, 1, 1, 0, 0, 0, 1, 0, 0, 9}},
		{104, []byte{0xAA}}, {119, []byte{0xBB, 0xCC}}, {127, []byte{0xDD}},
		{128, []byte{0, 0, 9, 0, 0, 0, 12, 1}},
	}
	for _, ck := range checks {
		if got := b[ck.off : ck.off+len(ck.want)]; !bytes.Equal(got, ck.want) {
			t.Errorf("offset %d: % x, want % x", ck.off, got, ck.want)
		}
	}
	got, err := DecodeNamespace(b)
	if err != nil || got != n {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if n.BlockSize() != 4096 || n.FormatIndex() != 1 {
		t.Errorf("BlockSize %d", n.BlockSize())
	}
}

func TestNSListsAndDescriptors(t *testing.T) {
	b := make([]byte, IdentifyLen)
	if err := EncodeNSList(b, []uint32{1, 2, 5, 9}, 2); err != nil {
		t.Fatal(err)
	}
	if ids, _ := DecodeNSList(nil, b); !reflect.DeepEqual(ids, []uint32{5, 9}) {
		t.Fatalf("ids %v", ids)
	}
	descs := []NSDescriptor{{NIDTEUI64, []byte{1, 2, 3, 4, 5, 6, 7, 8}}, {NIDTUUID, bytes.Repeat([]byte{0xEE}, 16)},
		{NIDTCSI, []byte{CSINVM}}}
	if err := EncodeNSDescList(b, descs); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:4], []byte{1, 8, 0, 0}) || !bytes.Equal(b[12:16], []byte{3, 16, 0, 0}) ||
		!bytes.Equal(b[32:37], []byte{4, 1, 0, 0, 0}) {
		t.Fatalf("layout % x", b[:40])
	}
	got, err := DecodeNSDescList(b)
	if err != nil || !reflect.DeepEqual(got, descs) {
		t.Fatalf("%v %v", got, err)
	}
}

// A discovery log page with one RDMA entry, as Linux's nvmet fills it
// for a port on 192.0.2.1:4420.
func TestGoldenDiscoveryLog(t *testing.T) {
	e := DiscoveryEntry{TRTYPE: TRTypeRDMA, ADRFAM: AdrFamIPv4, SUBTYPE: SubTypeNVM, TREQ: TReqNotSpecified,
		PORTID: 1, CNTLID: 0xFFFF, ASQSZ: 32, TRSVCID: "4420", SUBNQN: "nqn.2014-08.org.example:sub",
		TRADDR: "192.0.2.1", TSAS: RDMATSAS{QPTYPE: RDMAQPTypeConnected, PRTYPE: RDMAPRTypeNone, CMS: RDMACMSRDMACM}.Encode()}
	l := DiscoveryLog{GENCTR: 7, NUMREC: 1, Entries: []DiscoveryEntry{e}}
	b := make([]byte, l.Len())
	if err := l.Encode(b); err != nil {
		t.Fatal(err)
	}
	if len(b) != 2048 || b[0] != 7 || b[8] != 1 {
		t.Fatalf("header % x", b[:18])
	}
	en := b[1024:]
	checks := []struct {
		off  int
		want []byte
	}{
		{0, []byte{1, 1, 2, 0, 1, 0, 0xFF, 0xFF, 32, 0, 0, 0}},
		{32, []byte("4420\x00")},
		{256, []byte("nqn.2014-08.org.example:sub\x00")},
		{512, []byte("192.0.2.1\x00")},
		{768, []byte{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, ck := range checks {
		if got := en[ck.off : ck.off+len(ck.want)]; !bytes.Equal(got, ck.want) {
			t.Errorf("entry offset %d: % x, want % x", ck.off, got, ck.want)
		}
	}
	got, err := DecodeDiscoveryLog(b)
	if err != nil || !reflect.DeepEqual(got, l) {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if ParseRDMATSAS(&got.Entries[0].TSAS).CMS != RDMACMSRDMACM {
		t.Error("TSAS")
	}
	// The header alone: NUMREC known, no entries.
	if h, err := DecodeDiscoveryLog(b[:1024]); err != nil || h.NUMREC != 1 || len(h.Entries) != 0 {
		t.Fatalf("header only %+v %v", h, err)
	}
}

func TestLogPages(t *testing.T) {
	s := SMARTLog{Temperature: 300, AvailSpare: 100, PowerOnHours: 5, HostReads: 9}
	b := make([]byte, SMARTLogLen)
	if err := s.Encode(b); err != nil {
		t.Fatal(err)
	}
	if b[1] != 0x2c || b[2] != 1 || b[3] != 100 || b[64] != 9 || b[128] != 5 {
		t.Fatalf("SMART layout % x", b[:8])
	}
	if got, _ := DecodeSMARTLog(b); got != s {
		t.Fatalf("SMART %+v", got)
	}
	ei := ErrorInfo{ErrorCount: 1, SQID: 2, CID: 3, Status: StatusInvalidField.WithDNR(), ParamLoc: 40, NSID: 1, TrType: TRTypeRDMA}
	b = make([]byte, ErrorInfoLen)
	_ = ei.Encode(b)
	if b[12] != 0x04 || b[13] != 0x80 {
		t.Fatalf("status % x", b[12:14])
	}
	if got, _ := DecodeErrorInfo(b); got != ei {
		t.Fatalf("error info %+v", got)
	}
	fw := FirmwareSlot{AFI: 1, FRS: [7]string{"6.1"}}
	b = make([]byte, FirmwareSlotLen)
	_ = fw.Encode(b)
	if got, _ := DecodeFirmwareSlot(b); got != fw || string(b[8:16]) != "6.1     " {
		t.Fatalf("fw %+v", got)
	}
	var ce CmdEffects
	ce.Admin[AdminIdentify] = EffectCSUPP
	ce.IO[NVMWrite] = EffectCSUPP | EffectLBCC
	b = make([]byte, CmdEffectsLen)
	_ = ce.Encode(b)
	if b[4*6] != 1 || b[1024+4] != 3 {
		t.Fatal("effects layout")
	}
	if got, _ := DecodeCmdEffects(b); got != ce {
		t.Fatal("effects round trip")
	}
	b = make([]byte, ChangedNSLen)
	_ = EncodeChangedNSList(b, make([]uint32, 1025))
	if binary.LittleEndian.Uint32(b) != ChangedNSOverflow {
		t.Fatal("overflow marker")
	}
}

func TestCommandFields(t *testing.T) {
	g := GetLogPage{LID: LogDiscovery, NUMD: NUMDFor(0x80000), Offset: 1024, LSP: 1}
	c := g.Command(1, 0, KeyedSGL(0, 0x80000, 1))
	if c.CDW10 != 0xFFFF_0170 || c.CDW11 != 1 || c.CDW12 != 1024 {
		t.Fatalf("CDW10 %#x CDW11 %#x", c.CDW10, c.CDW11)
	}
	if got := c.GetLogPage(); got != g || got.Length() != 0x80000 {
		t.Fatalf("%+v", got)
	}
	id := Identify{CNS: CNSController, CNTID: 3}
	if got := id.Command(2, 0, SGL{}).Identify(); got != id {
		t.Fatalf("%+v", got)
	}
	f := Feature{FID: FeatNumQueues, Value: NumQueues{NSQ: 7, NCQ: 7}.Uint32()}
	if c := f.SetCommand(3, 0); c.Opcode != AdminSetFeatures || c.CDW10 != 7 || c.CDW11 != 0x00070007 {
		t.Fatalf("%+v", c)
	}
	if ParseNumQueues(0x0003_0001) != (NumQueues{NSQ: 1, NCQ: 3}) {
		t.Fatal("NumQueues")
	}
	rw := RW{SLBA: 0x1_0000_0002, NLB: 7, Control: RWFUA}
	c = rw.Command(NVMWrite, 4, 1, InlineSGL(0, 4096))
	if c.CDW10 != 2 || c.CDW11 != 1 || c.CDW12 != 0x4000_0007 || c.RW() != rw || rw.Blocks() != 8 {
		t.Fatalf("%+v", c)
	}
	d := DSM{NR: 1, Attributes: DSMDeallocate}
	c = d.Command(5, 1, InlineSGL(0, 32))
	if c.DSM() != d || d.Ranges() != 2 || c.CDW11 != 4 {
		t.Fatal("DSM")
	}
	rb := make([]byte, 32)
	r := DSMRange{NLB: 8, SLBA: 0x100}
	_ = r.Encode(rb[16:])
	rs, err := DecodeDSMRanges(nil, rb, 2)
	if err != nil || len(rs) != 2 || rs[1] != r || rb[20] != 8 || rb[24] != 0 || rb[25] != 1 {
		t.Fatalf("%v %v % x", rs, err, rb)
	}
	if _, err := DecodeDSMRanges(nil, rb, 3); err == nil {
		t.Fatal("short ranges decoded")
	}
	ae := AsyncEvent{Type: AEReqTypeNotice, Info: AENoticeNSChanged, LogPage: LogChangedNSList}
	if ae.DW0() != 0x040002 || ParseAsyncEvent(ae.DW0()) != ae {
		t.Fatal("AsyncEvent")
	}
	if a := (Abort{SQID: 1, CID: 9}); a.Command(1).Abort() != a {
		t.Fatal("Abort")
	}
	ip := InvalidParam{IPO: ConnectDataOffHOSTNQN, InData: true}
	if ip.DW0() != 0x10200 || ParseInvalidParam(ip.DW0()) != ip {
		t.Fatal("InvalidParam")
	}
}
