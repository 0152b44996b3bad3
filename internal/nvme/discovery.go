package nvme

import (
	"bytes"
	"encoding/binary"
)

// Sizes of the Discovery log page (NVMe-oF 1.1 Figure 31-32): a
// 1024-octet header and 1024-octet entries.
const (
	DiscoveryHeaderLen = 1024
	DiscoveryEntryLen  = 1024
	TRSVCIDLen         = 32
	TRADDRLen          = 256
	TSASLen            = 256
)

// Transport types (TRTYPE).
const (
	TRTypeRDMA uint8 = 1 // RDMA
	TRTypeFC   uint8 = 2 // Fibre Channel
	TRTypeTCP  uint8 = 3 // TCP
	TRTypeLoop uint8 = 254
)

// Address families (ADRFAM).
const (
	AdrFamIPv4 uint8 = 1 // AF_INET
	AdrFamIPv6 uint8 = 2 // AF_INET6
	AdrFamIB   uint8 = 3 // InfiniBand
	AdrFamFC   uint8 = 4 // Fibre Channel
)

// Subsystem types (SUBTYPE).
const (
	SubTypeReferral  uint8 = 1 // a referral to another discovery service
	SubTypeNVM       uint8 = 2 // an NVM subsystem
	SubTypeDiscovery uint8 = 3 // the current discovery subsystem (NVMe TP 8013)
)

// Transport requirements (TREQ).
const (
	TReqNotSpecified    uint8 = 0      // secure channel: not specified
	TReqRequired        uint8 = 1      // secure channel: required
	TReqNotRequired     uint8 = 2      // secure channel: not required
	TReqSQFlowDisableOK uint8 = 1 << 2 // the controller supports SQ flow control disable
)

// RDMA transport specific address subtype values (TSAS, NVMe-oF 1.1
// Figure 33).
const (
	RDMAQPTypeConnected uint8 = 1 // reliable connected
	RDMAQPTypeDatagram  uint8 = 2 // reliable datagram
	RDMAPRTypeNone      uint8 = 1 // no provider specified
	RDMAPRTypeIB        uint8 = 2 // InfiniBand
	RDMAPRTypeRoCE      uint8 = 3 // RoCE
	RDMAPRTypeRoCEv2    uint8 = 4 // RoCE v2
	RDMAPRTypeIWARP     uint8 = 5 // iWARP
	RDMACMSRDMACM       uint8 = 1 // RDMA_CM
)

// RDMATSAS is the TSAS of an RDMA discovery entry.
type RDMATSAS struct {
	QPTYPE uint8  // RDMA_QPTYPE (0)
	PRTYPE uint8  // RDMA_PRTYPE (1)
	CMS    uint8  // RDMA_CMS (2)
	PKEY   uint16 // RDMA_PKEY (9:8)
}

// Encode writes t into a TSAS field (TSASLen octets, zero elsewhere).
func (t RDMATSAS) Encode() [TSASLen]byte {
	var f [TSASLen]byte
	f[0], f[1], f[2] = t.QPTYPE, t.PRTYPE, t.CMS
	binary.LittleEndian.PutUint16(f[8:], t.PKEY)
	return f
}

// ParseRDMATSAS reads the RDMA fields of a TSAS field.
func ParseRDMATSAS(f *[TSASLen]byte) RDMATSAS {
	return RDMATSAS{QPTYPE: f[0], PRTYPE: f[1], CMS: f[2], PKEY: binary.LittleEndian.Uint16(f[8:])}
}

// DiscoveryEntry is one Discovery log page entry (NVMe-oF 1.1 Figure 32).
// TRSVCID and TRADDR are ASCII, NUL-padded when encoded, trailing NULs and
// spaces dropped when decoded; SUBNQN is NUL-terminated.
type DiscoveryEntry struct {
	TRTYPE  uint8         // transport type (0)
	ADRFAM  uint8         // address family (1)
	SUBTYPE uint8         // subsystem type (2)
	TREQ    uint8         // transport requirements (3)
	PORTID  uint16        // port ID (5:4)
	CNTLID  uint16        // controller ID: 0xFFFF dynamic, 0xFFFE static but any (7:6)
	ASQSZ   uint16        // admin max SQ size, at least 32 (9:8)
	EFLAGS  uint16        // entry flags (11:10)
	TRSVCID string        // transport service ID, e.g. "4420" (63:32)
	SUBNQN  string        // subsystem NQN (511:256)
	TRADDR  string        // transport address, e.g. "192.0.2.1" (767:512)
	TSAS    [TSASLen]byte // transport specific address subtype (1023:768)
}

// Encode writes e into the first DiscoveryEntryLen octets of b. Strings
// too long for their fields are cut (SUBNQN keeps its NUL).
func (e *DiscoveryEntry) Encode(b []byte) error {
	if err := checkLen(b, DiscoveryEntryLen, "discovery log entry"); err != nil {
		return err
	}
	b = b[:DiscoveryEntryLen]
	clear(b)
	le := binary.LittleEndian
	b[0], b[1], b[2], b[3] = e.TRTYPE, e.ADRFAM, e.SUBTYPE, e.TREQ
	le.PutUint16(b[4:], e.PORTID)
	le.PutUint16(b[6:], e.CNTLID)
	le.PutUint16(b[8:], e.ASQSZ)
	le.PutUint16(b[10:], e.EFLAGS)
	copy(b[32:64], e.TRSVCID)
	putNQN(b[256:512], e.SUBNQN)
	copy(b[512:768], e.TRADDR)
	copy(b[768:1024], e.TSAS[:])
	return nil
}

// DecodeDiscoveryEntry reads a discovery log entry.
func DecodeDiscoveryEntry(b []byte) (DiscoveryEntry, error) {
	var e DiscoveryEntry
	if err := checkLen(b, DiscoveryEntryLen, "discovery log entry"); err != nil {
		return e, err
	}
	le := binary.LittleEndian
	e.TRTYPE, e.ADRFAM, e.SUBTYPE, e.TREQ = b[0], b[1], b[2], b[3]
	e.PORTID = le.Uint16(b[4:])
	e.CNTLID = le.Uint16(b[6:])
	e.ASQSZ = le.Uint16(b[8:])
	e.EFLAGS = le.Uint16(b[10:])
	e.TRSVCID = trimField(b[32:64])
	e.SUBNQN = getNQN(b[256:512])
	e.TRADDR = trimField(b[512:768])
	copy(e.TSAS[:], b[768:1024])
	return e, nil
}

// trimField returns an ASCII field up to its first NUL, without trailing
// spaces.
func trimField(f []byte) string {
	if i := bytes.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	return string(bytes.TrimRight(f, " "))
}

// DiscoveryLog is the Discovery log page: its header and the entries a
// buffer holds.
type DiscoveryLog struct {
	GENCTR  uint64 // generation counter, changed whenever the log changes (7:0)
	NUMREC  uint64 // number of records in the whole log (15:8)
	RECFMT  uint16 // record format, 0 (17:16)
	Entries []DiscoveryEntry
}

// Len returns the size of the log page with its entries.
func (l *DiscoveryLog) Len() int { return DiscoveryHeaderLen + DiscoveryEntryLen*len(l.Entries) }

// Encode writes the header and the entries into b, which must hold
// l.Len() octets. NUMREC is written as given; set it to len(Entries).
func (l *DiscoveryLog) Encode(b []byte) error {
	if err := checkLen(b, l.Len(), "discovery log page"); err != nil {
		return err
	}
	clear(b[:DiscoveryHeaderLen])
	le := binary.LittleEndian
	le.PutUint64(b[0:], l.GENCTR)
	le.PutUint64(b[8:], l.NUMREC)
	le.PutUint16(b[16:], l.RECFMT)
	for i := range l.Entries {
		if err := l.Entries[i].Encode(b[DiscoveryHeaderLen+DiscoveryEntryLen*i:]); err != nil {
			return err
		}
	}
	return nil
}

// DecodeDiscoveryLog reads a Discovery log page, or the first part of
// one: b needs the header, and the entries decoded are those b holds
// whole, at most NUMREC. A host reads the header first (NUMREC) and then
// the whole page, checking that GENCTR did not change between the reads.
func DecodeDiscoveryLog(b []byte) (DiscoveryLog, error) {
	var l DiscoveryLog
	if err := checkLen(b, DiscoveryHeaderLen, "discovery log header"); err != nil {
		return l, err
	}
	le := binary.LittleEndian
	l.GENCTR = le.Uint64(b[0:])
	l.NUMREC = le.Uint64(b[8:])
	l.RECFMT = le.Uint16(b[16:])
	n := uint64(len(b)-DiscoveryHeaderLen) / DiscoveryEntryLen
	n = min(n, l.NUMREC)
	if n > 0 {
		l.Entries = make([]DiscoveryEntry, n)
	}
	for i := range l.Entries {
		l.Entries[i], _ = DecodeDiscoveryEntry(b[DiscoveryHeaderLen+DiscoveryEntryLen*i:])
	}
	return l, nil
}
