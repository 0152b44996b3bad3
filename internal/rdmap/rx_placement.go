package rdmap

import "github.com/goiwarp/iwarp/internal/mem"

// Placement of a received segment's payload straight into registered
// memory: a Write's target (pinned by PinRemote), a Read sink, a receive
// buffer or a Read V2 sink (the WR's SGEs at their recorded generations).
// The regions are pinned while the Decoder copies octets it had staged
// into them (Place, PlaceV), and for each buffer RxBuf hands out inside
// them, never across a wait on the peer.

// addDst adds dst, bytes of region at generation g, to the current FPDU's
// destination.
func (rx *rxState) addDst(dst []byte, region *mem.Region, g mem.Gen) {
	rx.dsts = append(rx.dsts, dst)
	rx.dregs = append(rx.dregs, region)
	rx.dgens = append(rx.dgens, g)
}

// place hands the destination built with addDst to the Decoder (which
// copies the octets it staged already); the caller holds transient pins of
// its regions across the call.
func (c *Core) place(sink sinkKind) {
	rx := &c.rx
	rx.sink = sink
	if len(rx.dsts) == 1 {
		rx.d.Place(rx.dsts[0])
	} else {
		rx.d.PlaceV(rx.dsts)
	}
}

// placeRemote places the payload into dst, a Write's target, pinned by
// PinRemote at g: the pin is released once the staged octets are in.
func (c *Core) placeRemote(dst []byte, region *mem.Region, g mem.Gen) {
	c.rx.addDst(dst, region, g)
	c.place(sinkRemote)
	region.Unpin(g)
}

// placeSGL places the current FPDU's n payload octets into an SGL at
// message offset mo (the caller checked that they fit), each SGE's piece
// straight into its region. It reports false if a region is no longer
// valid at the generation recorded (the WR failed, the QP went to ERROR).
func (c *Core) placeSGL(sgl []Seg, gens []mem.Gen, mo uint64, n int, sink sinkKind) bool {
	rx := &c.rx
	if n == 0 {
		rx.d.Place(nil)
		return true
	}
	left := uint64(n)
	for i := range sgl {
		s := &sgl[i]
		if mo >= uint64(s.Len) {
			mo -= uint64(s.Len)
			continue
		}
		k := min(uint64(s.Len)-mo, left)
		rx.addDst(s.bytes()[mo:mo+k], s.Region, gens[i])
		left -= k
		mo = 0
		if left == 0 {
			break
		}
	}
	for i, r := range rx.dregs {
		if !r.Pin(rx.dgens[i]) {
			for j := range i {
				rx.dregs[j].Unpin(rx.dgens[j])
			}
			rx.sink = sink
			c.lostPlacement()
			return false
		}
	}
	c.place(sink)
	for i, r := range rx.dregs {
		r.Unpin(rx.dgens[i])
	}
	return true
}

// pinRef is a transient pin of a region at a generation.
type pinRef struct {
	r *mem.Region
	g mem.Gen
}

// pinForRead pins what a read into b may write: the destination piece b
// is part of; or, when b is staging and markers are on, every piece of the
// destination, because the octets after a marker are staged and then
// copied into the destination as they are consumed (RxDone). It reports
// false, holding nothing, if a region is no longer valid at its
// generation.
func (c *Core) pinForRead(b []byte) bool {
	rx := &c.rx
	for i, d := range rx.dsts {
		if within(b, d) {
			return rx.pin(i)
		}
	}
	if !c.cfg.Framing.RecvMarkers || c.rx.d.PayloadLeft() == 0 {
		// Without markers the staging holds no payload of a placed FPDU;
		// with nothing left to place, only PAD and CRC are to come.
		return true
	}
	for i := range rx.dsts {
		if !rx.pin(i) {
			return false
		}
	}
	return true
}

// pin pins destination piece i's region for the next read; on failure it
// ends the pins taken for it.
func (rx *rxState) pin(i int) bool {
	if !rx.dregs[i].Pin(rx.dgens[i]) {
		rx.unpin()
		return false
	}
	rx.pins = append(rx.pins, pinRef{rx.dregs[i], rx.dgens[i]})
	return true
}

// unpin ends the pins taken for the last read.
func (rx *rxState) unpin() {
	for _, p := range rx.pins {
		p.r.Unpin(p.g)
	}
	clear(rx.pins)
	rx.pins = rx.pins[:0]
}
