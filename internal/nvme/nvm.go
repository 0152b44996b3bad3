package nvme

import "encoding/binary"

// RW is the command-specific part of Read, Write, Write Zeroes, Compare
// and Verify (NVMe Base 1.4 Figure 364, 376, 380): SLBA in CDW10-11; in
// CDW12 NLB (0's based) bits 15:0, DTYPE bits 23:20 (Write), DEAC bit 25
// (Write Zeroes), PRINFO bits 29:26, FUA bit 30, LR bit 31; CDW13 the
// dataset management hints.
type RW struct {
	SLBA    uint64 // starting LBA
	NLB     uint16 // number of logical blocks, 0's based
	Control uint16 // CDW12 bits 31:16: RWFUA, RWLimitedRetry, RWDeallocate ...
	DSM     uint32 // CDW13
}

// Bits of RW.Control (CDW12 bits 31:16).
const (
	RWDeallocate   uint16 = 1 << 9    // DEAC (Write Zeroes): deallocate
	RWPRINFOMask   uint16 = 0xF << 10 // PRINFO: protection information
	RWFUA          uint16 = 1 << 14   // FUA: force unit access
	RWLimitedRetry uint16 = 1 << 15   // LR: limited retry
)

// Blocks returns the number of logical blocks, NLB+1.
func (r RW) Blocks() uint32 { return uint32(r.NLB) + 1 }

// RW reads the read/write fields of a command.
func (c Command) RW() RW {
	return RW{SLBA: uint64(c.CDW11)<<32 | uint64(c.CDW10), NLB: uint16(c.CDW12),
		Control: uint16(c.CDW12 >> 16), DSM: c.CDW13}
}

// Command returns an I/O command of opcode op (NVMRead, NVMWrite,
// NVMWriteZeroes ...) for namespace nsid, data dptr.
func (r RW) Command(op uint8, cid uint16, nsid uint32, dptr SGL) Command {
	return Command{Opcode: op, Flags: FlagSGL, CID: cid, NSID: nsid, DPTR: dptr,
		CDW10: uint32(r.SLBA), CDW11: uint32(r.SLBA >> 32),
		CDW12: uint32(r.NLB) | uint32(r.Control)<<16, CDW13: r.DSM}
}

// DSM is the command-specific part of Dataset Management (NVMe Base 1.4
// Figure 371-372): NR, the 0's based number of ranges, in CDW10 bits 7:0;
// the attributes IDR, IDW and AD in CDW11 bits 0, 1, 2.
type DSM struct {
	NR         uint8 // number of ranges, 0's based
	Attributes uint32
}

// Dataset Management attributes (CDW11).
const (
	DSMIntegralRead  uint32 = 1 << 0 // IDR
	DSMIntegralWrite uint32 = 1 << 1 // IDW
	DSMDeallocate    uint32 = 1 << 2 // AD: deallocate the ranges
)

// DSMRangeLen is the size of one Dataset Management range; DSMMaxRanges
// ranges fit in one command.
const (
	DSMRangeLen  = 16
	DSMMaxRanges = 256
)

// Ranges returns the number of ranges, NR+1.
func (d DSM) Ranges() int { return int(d.NR) + 1 }

// DSM reads the Dataset Management fields of a command.
func (c Command) DSM() DSM { return DSM{NR: uint8(c.CDW10), Attributes: c.CDW11} }

// Command returns a Dataset Management command for namespace nsid whose
// ranges dptr describes.
func (d DSM) Command(cid uint16, nsid uint32, dptr SGL) Command {
	return Command{Opcode: NVMDatasetMgmt, Flags: FlagSGL, CID: cid, NSID: nsid, DPTR: dptr,
		CDW10: uint32(d.NR), CDW11: d.Attributes}
}

// DSMRange is one range of Dataset Management (NVMe Base 1.4 Figure
// 373): context attributes (bytes 3:0), length in logical blocks (7:4,
// 1's based), starting LBA (15:8).
type DSMRange struct {
	Attributes uint32
	NLB        uint32
	SLBA       uint64
}

// DecodeDSMRanges reads n ranges from b, which must hold n*DSMRangeLen
// octets; dst is reused when large enough.
func DecodeDSMRanges(dst []DSMRange, b []byte, n int) ([]DSMRange, error) {
	if n < 0 || n > DSMMaxRanges {
		return dst[:0], &LengthError{What: "Dataset Management ranges", Need: DSMMaxRanges * DSMRangeLen, Got: n * DSMRangeLen}
	}
	if err := checkLen(b, n*DSMRangeLen, "Dataset Management ranges"); err != nil {
		return dst[:0], err
	}
	dst = dst[:0]
	le := binary.LittleEndian
	for i := range n {
		r := b[i*DSMRangeLen:]
		dst = append(dst, DSMRange{Attributes: le.Uint32(r), NLB: le.Uint32(r[4:]), SLBA: le.Uint64(r[8:])})
	}
	return dst, nil
}

// Encode writes r into the first DSMRangeLen octets of b.
func (r *DSMRange) Encode(b []byte) error {
	if err := checkLen(b, DSMRangeLen, "Dataset Management range"); err != nil {
		return err
	}
	le := binary.LittleEndian
	le.PutUint32(b, r.Attributes)
	le.PutUint32(b[4:], r.NLB)
	le.PutUint64(b[8:], r.SLBA)
	return nil
}
