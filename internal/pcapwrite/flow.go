package pcapwrite

import (
	"net/netip"
	"time"
)

// Side names an end of a Flow.
type Side int

const (
	// Client is the active opener: it sends the SYN.
	Client Side = 0
	// Server is the passive opener: it answers with SYN-ACK.
	Server Side = 1
)

// Initial sequence numbers of every flow, fixed so that captures of the
// same traffic are byte-stable; the server's wraps past 2^32 after 256 MiB,
// which readers must handle anyway.
const (
	clientISN = 0x10000000
	serverISN = 0xF0000000
)

// Flow is one synthesized TCP connection in a Writer. Its methods are safe
// for concurrent use; each records its packets atomically.
type Flow struct {
	w    *Writer
	ends [2]netip.AddrPort
	isn  [2]uint32
	sent [2]uint32 // payload bytes sent by each side, modulo 2^32
	fin  [2]bool   // each side has sent its FIN
}

// normalize returns a and b as addresses of one family without zones:
// IPv4-mapped IPv6 addresses become IPv4, and an IPv4 address paired with
// an IPv6 one is mapped into IPv6.
func normalize(a, b netip.AddrPort) (netip.AddrPort, netip.AddrPort, bool) {
	if !a.IsValid() || !b.IsValid() {
		return a, b, false
	}
	fix := func(ap netip.AddrPort) netip.AddrPort {
		return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	}
	a, b = fix(a), fix(b)
	if a.Addr().Is4() != b.Addr().Is4() {
		to6 := func(ap netip.AddrPort) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom16(ap.Addr().As16()), ap.Port())
		}
		a, b = to6(a), to6(b)
	}
	return a, b, true
}

// NewFlow starts a TCP connection from client to server at time t: it
// writes the SYN, SYN-ACK and ACK. The addresses must be valid; an IPv4
// address paired with an IPv6 one is written as an IPv4-mapped IPv6
// address, and zones are dropped.
func (pw *Writer) NewFlow(t time.Time, client, server netip.AddrPort) (*Flow, error) {
	c, s, ok := normalize(client, server)
	if !ok {
		return nil, ErrAddr
	}
	f := &Flow{w: pw, ends: [2]netip.AddrPort{c, s}, isn: [2]uint32{clientISN, serverISN}}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if err := pw.usable(); err != nil {
		return nil, err
	}
	pw.packet(t, &Frame{Src: c, Dst: s, Seq: f.isn[0], Flags: flagSYN})
	pw.packet(t, &Frame{Src: s, Dst: c, Seq: f.isn[1], Ack: f.isn[0] + 1, Flags: flagSYN | flagACK})
	pw.packet(t, &Frame{Src: c, Dst: s, Seq: f.isn[0] + 1, Ack: f.isn[1] + 1, Flags: flagACK})
	return f, pw.err
}

// Addrs returns the client and server addresses as written.
func (f *Flow) Addrs() (client, server netip.AddrPort) { return f.ends[0], f.ends[1] }

// next returns the sequence number of side's next byte; it holds w.mu.
func (f *Flow) next(side Side) uint32 { return f.isn[side] + 1 + f.sent[side] }

// ackOf returns what the other end acknowledges of side: everything it
// sent, and its FIN.
func (f *Flow) ackOf(side Side) uint32 {
	a := f.next(side)
	if f.fin[side] {
		a++
	}
	return a
}

// Data records p sent by side at time t: segments of at most the Writer's
// MSS, then one ACK from the other side. Data after side's FIN is not
// recorded.
func (f *Flow) Data(t time.Time, side Side, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	pw := f.w
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if err := pw.usable(); err != nil {
		return err
	}
	if f.fin[side] {
		return nil
	}
	other := 1 - side
	for len(p) > 0 {
		n := min(len(p), pw.mss)
		pw.packet(t, &Frame{Src: f.ends[side], Dst: f.ends[other], Seq: f.next(side),
			Ack: f.ackOf(other), Flags: flagACK | flagPSH, Payload: p[:n]})
		f.sent[side] += uint32(n)
		p = p[n:]
	}
	pw.packet(t, &Frame{Src: f.ends[other], Dst: f.ends[side], Seq: f.ackOf(other),
		Ack: f.ackOf(side), Flags: flagACK})
	return pw.err
}

// Fin records side's FIN at time t and the other side's ACK of it. A second
// FIN from the same side is not recorded.
func (f *Flow) Fin(t time.Time, side Side) error {
	pw := f.w
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if err := pw.usable(); err != nil {
		return err
	}
	if f.fin[side] {
		return nil
	}
	other := 1 - side
	pw.packet(t, &Frame{Src: f.ends[side], Dst: f.ends[other], Seq: f.next(side),
		Ack: f.ackOf(other), Flags: flagFIN | flagACK})
	f.fin[side] = true
	pw.packet(t, &Frame{Src: f.ends[other], Dst: f.ends[side], Seq: f.ackOf(other),
		Ack: f.ackOf(side), Flags: flagACK})
	return pw.err
}
