package perftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// The messages perftest 4.5 (linux-rdma/perftest, Debian 4.5+0.17-1)
// exchanges on its first rdma_cm connection when run with -R: each is one
// Send, and the two sides exchange them in lock step (the client sends,
// the server answers with its own message of the same kind). Layouts as
// recorded from two siw peers in interop/captures/perftest (README there).

// version is the version string perftest 4.5 sends (16 bytes,
// NUL-padded); perftest changes its exchange by the peer's version, and
// we implement the exchange of this one.
const version = "6.06"

// minVersion is the oldest peer version whose exchange is the one
// implemented here (8-byte iteration counts in the reports from 5.33 on).
const minVersion = 5.33

const (
	versionLen    = 16
	wordLen       = 4  // cycle buffer, cache line size
	mtuLen        = 2  // the MTU enum as a decimal string
	recordLen     = 56 // struct pingpong_dest
	reportWordLen = 8  // one word of the bandwidth report
)

// versionMsg encodes our version message.
func versionMsg() []byte {
	b := make([]byte, versionLen)
	copy(b, version)
	return b
}

// parseVersion returns the peer's version string and number.
func parseVersion(b []byte) (string, float64, error) {
	if len(b) != versionLen {
		return "", 0, fmt.Errorf("version message of %d bytes, want %d", len(b), versionLen)
	}
	s := string(bytes.TrimRight(b, "\x00"))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s, 0, fmt.Errorf("peer version %q is not a number", s)
	}
	return s, v, nil
}

// word encodes a 32-bit word in network byte order (check_sys_data).
func word(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// mtuMsg encodes the MTU message: the ibv_mtu enum as a decimal string in
// two bytes ("3\x00" is 1024 bytes, what siw reports).
func mtuMsg(enum int) []byte {
	b := make([]byte, mtuLen)
	copy(b, strconv.Itoa(enum))
	return b[:mtuLen]
}

// record is perftest's struct pingpong_dest: one side's QP and buffer.
// On the wire every integer is big-endian (perftest converts each field;
// the 4 bytes after RKey are structure padding, sent uninitialised).
type record struct {
	LID      uint32
	OutReads uint32 // outstanding RDMA Reads this side allows (IRD)
	QPN      uint32
	PSN      uint32
	RKey     uint32 // the STag of the buffer the peer targets
	VAddr    uint64 // its address (our TO)
	GID      [16]byte
	SRQN     uint32
	GIDIndex uint32
}

// encode returns the 56-byte record.
func (r *record) encode() []byte {
	b := make([]byte, recordLen)
	binary.BigEndian.PutUint32(b[0:], r.LID)
	binary.BigEndian.PutUint32(b[4:], r.OutReads)
	binary.BigEndian.PutUint32(b[8:], r.QPN)
	binary.BigEndian.PutUint32(b[12:], r.PSN)
	binary.BigEndian.PutUint32(b[16:], r.RKey)
	binary.BigEndian.PutUint64(b[24:], r.VAddr)
	copy(b[32:48], r.GID[:])
	binary.BigEndian.PutUint32(b[48:], r.SRQN)
	binary.BigEndian.PutUint32(b[52:], r.GIDIndex)
	return b
}

// parseRecord decodes a 56-byte record (the padding is ignored).
func parseRecord(b []byte) (record, error) {
	var r record
	if len(b) != recordLen {
		return r, fmt.Errorf("QP record of %d bytes, want %d", len(b), recordLen)
	}
	r.LID = binary.BigEndian.Uint32(b[0:])
	r.OutReads = binary.BigEndian.Uint32(b[4:])
	r.QPN = binary.BigEndian.Uint32(b[8:])
	r.PSN = binary.BigEndian.Uint32(b[12:])
	r.RKey = binary.BigEndian.Uint32(b[16:])
	r.VAddr = binary.BigEndian.Uint64(b[24:])
	copy(r.GID[:], b[32:48])
	r.SRQN = binary.BigEndian.Uint32(b[48:])
	r.GIDIndex = binary.BigEndian.Uint32(b[52:])
	return r, nil
}

// bwReport is a bandwidth test's result as the client reports it to the
// server after the test (xchg_bw_reports): five big-endian 8-byte words,
// the floating-point ones IEEE 754 doubles, bandwidths in MiB/s
// (perftest's "MB"), the message rate in millions per second.
type bwReport struct {
	Size, Iters uint64
	PeakMBps    float64
	AvgMBps     float64
	MsgRateMpps float64
}

// words returns the five messages of the report, in order.
func (r *bwReport) words() [][]byte {
	be := binary.BigEndian
	return [][]byte{
		be.AppendUint64(nil, r.Size),
		be.AppendUint64(nil, r.Iters),
		be.AppendUint64(nil, math.Float64bits(r.PeakMBps)),
		be.AppendUint64(nil, math.Float64bits(r.AvgMBps)),
		be.AppendUint64(nil, math.Float64bits(r.MsgRateMpps)),
	}
}

// parseReport decodes the five report words.
func parseReport(w [][]byte) (bwReport, error) {
	var r bwReport
	if len(w) != 5 {
		return r, fmt.Errorf("%d report words, want 5", len(w))
	}
	for i, b := range w {
		if len(b) != reportWordLen {
			return r, fmt.Errorf("report word %d of %d bytes, want %d", i, len(b), reportWordLen)
		}
	}
	be := binary.BigEndian
	r.Size, r.Iters = be.Uint64(w[0]), be.Uint64(w[1])
	r.PeakMBps = math.Float64frombits(be.Uint64(w[2]))
	r.AvgMBps = math.Float64frombits(be.Uint64(w[3]))
	r.MsgRateMpps = math.Float64frombits(be.Uint64(w[4]))
	return r, nil
}
