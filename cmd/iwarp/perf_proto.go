package main

import (
	"encoding/binary"
	"errors"

	"github.com/goiwarp/iwarp"
)

// The "iwarp perf" protocol. Every test is one or more fresh connections.
// The client's MPA Request carries a perfDesc as private data (what the
// server must set up), the server's Reply a perfReply (its buffer and its
// process counters at that moment). At the end of a test the client sends
// a zero-length Send ("done") after its last message; the server answers
// with a Send holding a perfReport once everything before it has arrived,
// which is how bytes are confirmed at the sink.

const (
	perfMagic     = 'P'
	perfDescLen   = 40
	perfReplyLen  = 48
	perfReportLen = 64
	perfMaxRecv   = 1024 // receives the server keeps posted at most
)

// Descriptor flags.
const (
	perfFlagLat = 1 << iota // a latency test: the server echoes
	perfFlagCRC             // CRC on (both sides ask, or neither)
)

// perfDesc is what the client asks the server to set up.
type perfDesc struct {
	op     perfOp
	flags  uint8
	size   uint32 // message size
	recvs  uint32 // receives the server keeps posted (credits)
	batch  uint32 // the server returns credits every batch receives
	remote iwarp.RemoteBuffer
}

func (d *perfDesc) encode() []byte {
	b := make([]byte, perfDescLen)
	b[0], b[1], b[2] = perfMagic, byte(d.op), d.flags
	binary.BigEndian.PutUint32(b[4:], d.size)
	binary.BigEndian.PutUint32(b[8:], d.recvs)
	binary.BigEndian.PutUint32(b[12:], d.batch)
	rb, _ := d.remote.MarshalBinary()
	copy(b[16:], rb)
	return b
}

var errPerfDesc = errors.New("not an iwarp perf request")

func decodePerfDesc(b []byte) (perfDesc, error) {
	if len(b) != perfDescLen || b[0] != perfMagic {
		return perfDesc{}, errPerfDesc
	}
	d := perfDesc{op: perfOp(b[1]), flags: b[2], size: binary.BigEndian.Uint32(b[4:]),
		recvs: binary.BigEndian.Uint32(b[8:]), batch: binary.BigEndian.Uint32(b[12:])}
	if err := d.remote.UnmarshalBinary(b[16:32]); err != nil {
		return perfDesc{}, err
	}
	if d.op < perfSend || d.op > perfStat || d.size > 1<<26 || d.recvs > perfMaxRecv || d.batch == 0 {
		return perfDesc{}, errPerfDesc
	}
	return d, nil
}

// perfReply is the server's MPA Reply: its buffer and its counters.
type perfReply struct {
	remote iwarp.RemoteBuffer
	sys    sysSnapshot
}

func (r *perfReply) encode() []byte {
	b, _ := r.remote.MarshalBinary()
	return r.sys.appendTo(b)
}

func decodePerfReply(b []byte) (perfReply, error) {
	var r perfReply
	if len(b) != perfReplyLen {
		return r, errors.New("bad perf reply")
	}
	if err := r.remote.UnmarshalBinary(b[:16]); err != nil {
		return r, err
	}
	r.sys = decodeSysSnapshot(b[16:])
	return r, nil
}

// perfReport is the server's account of a test, sent after "done".
type perfReport struct {
	recvs  uint64 // receive completions (without "done")
	seqErr uint64 // receives whose sequence number was not the next one
	sys    sysSnapshot
}

func (r *perfReport) encode(b []byte) {
	binary.BigEndian.PutUint64(b[0:], r.recvs)
	binary.BigEndian.PutUint64(b[8:], r.seqErr)
	r.sys.appendTo(b[16:16])
}

func decodePerfReport(b []byte) perfReport {
	return perfReport{recvs: binary.BigEndian.Uint64(b), seqErr: binary.BigEndian.Uint64(b[8:]), sys: decodeSysSnapshot(b[16:])}
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
