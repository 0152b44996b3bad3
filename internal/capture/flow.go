package capture

import (
	"errors"
	"net/netip"
	"time"
)

// Flow synthesizes one TCP connection into a PcapWriter with Ethernet
// framing: a three-way handshake, data in segments of at most MSS bytes each
// acknowledged by the peer, optional retransmissions, and a FIN exchange.
// Side 0 is the client (active opener), side 1 the server.
type Flow struct {
	W      *PcapWriter
	Client netip.AddrPort
	Server netip.AddrPort
	MSS    int           // payload bytes per segment; 0 means 1460
	Time   time.Time     // timestamp of the next packet
	Step   time.Duration // added to Time after every packet; 0 means 1 ms

	isn  [2]uint32
	sent [2][]byte // every byte sent so far, by side
	ipID uint16
	buf  []byte
}

// ErrFlowRange is returned by Resend for a range not yet sent.
var ErrFlowRange = errors.New("capture: resend range beyond the bytes sent")

func (f *Flow) ends(side int) (src, dst netip.AddrPort) {
	if side == 0 {
		return f.Client, f.Server
	}
	return f.Server, f.Client
}

func (f *Flow) write(side int, seq, ack uint32, flags uint8, payload []byte) error {
	src, dst := f.ends(side)
	f.ipID++
	f.buf = AppendTCPFrame(f.buf[:0], &TCPFrame{Src: src, Dst: dst, Seq: seq, Ack: ack,
		Flags: flags, IPID: f.ipID, Payload: payload})
	err := f.W.WritePacket(f.Time, f.buf)
	step := f.Step
	if step == 0 {
		step = time.Millisecond
	}
	f.Time = f.Time.Add(step)
	return err
}

// nextSeq returns the sequence number after everything side has sent.
func (f *Flow) nextSeq(side int) uint32 { return f.isn[side] + 1 + uint32(len(f.sent[side])) }

// Open writes the handshake. The initial sequence numbers are fixed so that
// the output is byte-stable: the client starts at 0x10000000, the server at
// 0xF0000000 (its sequence numbers wrap past 2^32 after 256 MiB).
func (f *Flow) Open() error {
	f.isn = [2]uint32{0x10000000, 0xF0000000}
	if err := f.write(0, f.isn[0], 0, TCPSyn, nil); err != nil {
		return err
	}
	if err := f.write(1, f.isn[1], f.isn[0]+1, TCPSyn|TCPAck, nil); err != nil {
		return err
	}
	return f.write(0, f.isn[0]+1, f.isn[1]+1, TCPAck, nil)
}

// Send writes data from side in MSS-sized segments, each acknowledged.
func (f *Flow) Send(side int, data []byte) error {
	mss := f.MSS
	if mss <= 0 {
		mss = 1460
	}
	for len(data) > 0 {
		n := min(len(data), mss)
		if err := f.write(side, f.nextSeq(side), f.nextSeq(1-side), TCPAck|TCPPsh, data[:n]); err != nil {
			return err
		}
		f.sent[side] = append(f.sent[side], data[:n]...)
		data = data[n:]
		if err := f.write(1-side, f.nextSeq(1-side), f.nextSeq(side), TCPAck, nil); err != nil {
			return err
		}
	}
	return nil
}

// Resend writes again the n bytes side sent from stream offset off, as a
// retransmission would.
func (f *Flow) Resend(side int, off, n int) error {
	if off < 0 || n < 0 || off+n > len(f.sent[side]) {
		return ErrFlowRange
	}
	return f.write(side, f.isn[side]+1+uint32(off), f.nextSeq(1-side), TCPAck|TCPPsh, f.sent[side][off:off+n])
}

// Close writes the FIN exchange.
func (f *Flow) Close() error {
	if err := f.write(0, f.nextSeq(0), f.nextSeq(1), TCPFin|TCPAck, nil); err != nil {
		return err
	}
	if err := f.write(1, f.nextSeq(1), f.nextSeq(0)+1, TCPFin|TCPAck, nil); err != nil {
		return err
	}
	return f.write(0, f.nextSeq(0)+1, f.nextSeq(1)+1, TCPAck, nil)
}
