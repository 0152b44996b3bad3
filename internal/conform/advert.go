package conform

import (
	"encoding/binary"
	"fmt"
)

// Region is one advertised remote buffer: a peer's STag, the TO of its first
// byte, and its length.
type Region struct {
	STag uint32
	TO   uint64
	Len  uint32
}

// Advertisement slots, in the order a responder lists them. Only the first
// is needed for most cases; the others name memory whose misuse a case tests.
const (
	// SlotMain: remote read, write and atomic access, 8-byte aligned.
	SlotMain = iota
	// SlotReadOnly: remote read access only.
	SlotReadOnly
	// SlotOtherPD: registered with remote access in a protection domain
	// other than the connection's.
	SlotOtherPD
	// SlotInvalidated: an STag that was valid and has been invalidated
	// (deregistered).
	SlotInvalidated
	// SlotRekeyed: the old STag of a region whose key was changed since.
	SlotRekeyed
	// SlotWriteOnly: remote write access only (no remote read or atomic).
	SlotWriteOnly
	// The memory window slots (cases_mw.go). Each window exposes 64
	// bytes that lie inside a larger registered region, not at its start.
	//
	// SlotWindow: a bound type 2 window with remote read, write and atomic
	// rights, 8-byte aligned, without remote invalidate.
	SlotWindow
	// SlotWindowReadOnly: a bound type 1 window with remote read only.
	SlotWindowReadOnly
	// SlotWindowStale: the STag of a window's earlier binding (the window
	// was bound again since).
	SlotWindowStale
	// SlotWindowUnbound: the STag of an allocated window that is not bound.
	SlotWindowUnbound
	// NumSlots is the number of slots of a full advertisement.
	NumSlots
)

// RegionLen is the size of one advertised entry: rping's encoding.
const RegionLen = 16

// Advert is what a responder advertised: up to NumSlots regions, in slot
// order. Regions not advertised are absent from Have.
type Advert struct {
	Regions [NumSlots]Region
	Have    [NumSlots]bool
}

// ParseAdvert reads an advertisement from MPA private data: consecutive
// 16-byte entries ({TO u64, STag u32, length u32}, big-endian). Private data
// that is not a whole number of entries advertises nothing; entries beyond
// NumSlots are ignored.
func ParseAdvert(pd []byte) Advert {
	var a Advert
	if len(pd) == 0 || len(pd)%RegionLen != 0 {
		return a
	}
	for i := 0; i < NumSlots && (i+1)*RegionLen <= len(pd); i++ {
		e := pd[i*RegionLen:]
		a.Regions[i] = Region{
			TO:   binary.BigEndian.Uint64(e),
			STag: binary.BigEndian.Uint32(e[8:]),
			Len:  binary.BigEndian.Uint32(e[12:]),
		}
		a.Have[i] = true
	}
	return a
}

// AppendAdvert appends the encoding of regions (in slot order) to dst.
func AppendAdvert(dst []byte, regions ...Region) []byte {
	for _, r := range regions {
		dst = binary.BigEndian.AppendUint64(dst, r.TO)
		dst = binary.BigEndian.AppendUint32(dst, r.STag)
		dst = binary.BigEndian.AppendUint32(dst, r.Len)
	}
	return dst
}

// String describes the advertisement for reports.
func (a Advert) String() string {
	if !a.Have[SlotMain] {
		return "no region advertised"
	}
	s := ""
	names := [NumSlots]string{"main", "read-only", "other-PD", "invalidated", "re-keyed", "write-only",
		"window", "read-only window", "stale window", "unbound window"}
	for i, r := range a.Regions {
		if !a.Have[i] {
			continue
		}
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s STag %#x TO %#x len %d", names[i], r.STag, r.TO, r.Len)
	}
	return s
}
