package perf

import (
	"encoding/binary"
	"errors"

	"github.com/goiwarp/iwarp"
)

// The "iwarp perf" protocol. Every test is one or more fresh connections.
// The client's MPA Request carries a desc as private data (what the
// server must set up), the server's Reply a reply (its buffer and its
// process counters at that moment). At the end of a test the client sends
// a zero-length Send ("done") after its last message; the server answers
// with a Send holding a report once everything before it has arrived,
// which is how bytes are confirmed at the sink.

const (
	magic     = 'P'
	descLen   = 40
	replyLen  = 72
	reportLen = 64
	maxRecv   = 1024 // receives the server keeps posted at most
)

// Descriptor flags.
const (
	flagLat     = 1 << iota // a latency test: the server echoes
	flagCRC                 // CRC on (both sides ask, or neither)
	flagRelease             // a stat that first closes the server's idle QPs (idle.go)
	flagAway                // resp-lat: after every second answer the server stays away from its CQ a while (resplat.go)
)

// desc is what the client asks the server to set up.
type desc struct {
	op     Op
	flags  uint8
	size   uint32 // message size
	recvs  uint32 // receives the server keeps posted (credits)
	batch  uint32 // the server returns credits every batch receives
	remote iwarp.RemoteBuffer
	slots  uint16 // Writes and Reads: message-size slots of the server's buffer (0 is 1)
}

// spread is the number of message-size slots of the server's buffer.
func (d *desc) spread() int {
	if d.slots > 1 && (d.op == Write || d.op == Read) {
		return int(d.slots)
	}
	return 1
}

func (d *desc) encode() []byte {
	b := make([]byte, descLen)
	b[0], b[1], b[2] = magic, byte(d.op), d.flags
	binary.BigEndian.PutUint32(b[4:], d.size)
	binary.BigEndian.PutUint32(b[8:], d.recvs)
	binary.BigEndian.PutUint32(b[12:], d.batch)
	rb, _ := d.remote.MarshalBinary()
	copy(b[16:], rb)
	binary.BigEndian.PutUint16(b[32:], d.slots)
	return b
}

var errDesc = errors.New("not an iwarp perf request")

func decodeDesc(b []byte) (desc, error) {
	if len(b) != descLen || b[0] != magic {
		return desc{}, errDesc
	}
	d := desc{op: Op(b[1]), flags: b[2], size: binary.BigEndian.Uint32(b[4:]),
		recvs: binary.BigEndian.Uint32(b[8:]), batch: binary.BigEndian.Uint32(b[12:]), slots: binary.BigEndian.Uint16(b[32:])}
	if err := d.remote.UnmarshalBinary(b[16:32]); err != nil {
		return desc{}, err
	}
	if d.op < Send || d.op > opStat || d.size > 1<<26 || d.recvs > maxRecv || d.batch == 0 ||
		uint64(max(d.slots, 1))*uint64(d.size) > MaxSize {
		return desc{}, errDesc
	}
	return d, nil
}

// reply is the server's MPA Reply: its buffer and its counters; the
// answer to a stat also has its file descriptors and idle QPs.
type reply struct {
	remote iwarp.RemoteBuffer
	sys    sysSnapshot
	fds    fdUse
	idle   uint64 // idle QPs the server holds
}

// fdUse is a process's file descriptors: open, and the most it may open
// (0: unknown).
type fdUse struct{ open, limit uint64 }

func (r *reply) encode() []byte {
	b, _ := r.remote.MarshalBinary()
	b = r.sys.appendTo(b)
	b = binary.BigEndian.AppendUint64(b, r.fds.open)
	b = binary.BigEndian.AppendUint64(b, r.fds.limit)
	return binary.BigEndian.AppendUint64(b, r.idle)
}

func decodeReply(b []byte) (reply, error) {
	var r reply
	if len(b) != replyLen {
		return r, errors.New("bad perf reply")
	}
	if err := r.remote.UnmarshalBinary(b[:16]); err != nil {
		return r, err
	}
	r.sys = decodeSysSnapshot(b[16:])
	r.fds = fdUse{open: binary.BigEndian.Uint64(b[48:]), limit: binary.BigEndian.Uint64(b[56:])}
	r.idle = binary.BigEndian.Uint64(b[64:])
	return r, nil
}

// report is the server's account of a test, sent after "done".
type report struct {
	recvs  uint64 // receive completions (without "done")
	seqErr uint64 // receives whose sequence number was not the next one
	sys    sysSnapshot
}

func (r *report) encode(b []byte) {
	binary.BigEndian.PutUint64(b[0:], r.recvs)
	binary.BigEndian.PutUint64(b[8:], r.seqErr)
	r.sys.appendTo(b[16:16])
}

func decodeReport(b []byte) report {
	return report{recvs: binary.BigEndian.Uint64(b), seqErr: binary.BigEndian.Uint64(b[8:]), sys: decodeSysSnapshot(b[16:])}
}

// sysSnapshot is a process's counters at one moment.
type sysSnapshot struct {
	cpuNS   uint64 // user + system CPU time
	mallocs uint64 // heap allocations so far (runtime.MemStats.Mallocs)
	rss     uint64 // resident set size, bytes
	// base (in a report) is the server's mallocs when its connection was
	// set up, so that setup does not count as allocations per operation.
	base uint64
}

func (s sysSnapshot) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, s.cpuNS)
	b = binary.BigEndian.AppendUint64(b, s.mallocs)
	b = binary.BigEndian.AppendUint64(b, s.rss)
	return binary.BigEndian.AppendUint64(b, s.base)
}

func decodeSysSnapshot(b []byte) sysSnapshot {
	return sysSnapshot{cpuNS: binary.BigEndian.Uint64(b), mallocs: binary.BigEndian.Uint64(b[8:]), rss: binary.BigEndian.Uint64(b[16:]), base: binary.BigEndian.Uint64(b[24:])}
}
