package decode

import "iter"

// Each decodes the connection's two streams and yields every item, the
// two directions merged in capture order (by the frame that carried each
// item's last byte). It stops early when yield returns false. Stats, CRCDir,
// MPA and Warnings are final when it returns; each call decodes afresh.
//
// Items are produced as the streams are walked, so memory does not grow
// with the number of FPDUs. For a connection not known to be MPA (no
// startup, port not in Options.Ports), items are held back until the first
// FPDU with a valid CRC proves it is; without one it yields nothing and
// MPA stays false.
func (dc *Conn) Each(yield func(*Item) bool) {
	dc.Stats, dc.CRCDir, dc.Warnings = [2]DirStats{}, [2]CRCMode{}, nil
	if dc.strict {
		dc.MPA, dc.Notes = false, nil
	}
	var next [2]func() (Item, bool)
	for d := range 2 {
		w := dc.walker(d)
		n, stop := iter.Pull(func(y func(Item) bool) {
			w.yield = y
			w.walk()
		})
		defer stop()
		next[d] = n
		defer func() { dc.CRCDir[d] = w.crc }()
	}
	var head [2]Item
	var ok [2]bool
	for d := range 2 {
		head[d], ok[d] = next[d]()
	}
	var held []Item
	proven := !dc.strict
	for ok[0] || ok[1] {
		d := 0
		if !ok[0] || (ok[1] && head[1].Frame < head[0].Frame) {
			d = 1
		}
		it := head[d]
		head[d], ok[d] = next[d]()
		if !proven {
			held = append(held, it)
			if it.Kind != KindFPDU {
				continue
			}
			proven = true
			dc.MPA = true
			dc.Notes = append(dc.Notes, "no MPA startup captured: found FPDUs with a valid CRC32c")
			for i := range held {
				if !yield(&held[i]) {
					return
				}
			}
			held = nil
			continue
		}
		if !yield(&it) {
			return
		}
	}
}

// walker returns the walker of direction d, positioned after its MPA frame.
func (dc *Conn) walker(d int) *walker {
	st := dc.starts[d]
	w := &walker{conn: dc, d: d, s: dc.C.Dir[d], strict: dc.strict, crc: dc.CRC, markers: dc.Markers[d], start: st}
	switch {
	case st.ok && st.err == nil:
		w.base, w.baseKnown = uint64(st.size), true
		w.pos = w.base
	case st.ok:
		w.pos = uint64(st.size)
	}
	return w
}
