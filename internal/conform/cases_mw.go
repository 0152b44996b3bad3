package conform

import (
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// windowCases misuse the responder's memory windows (RFC 5040 §2 "Memory
// Window", §6.4, §7.1; RFC 5041 §7.2; RFC 7306 §8.1): tagged Writes, Read
// Requests and Atomic Requests through a window outside its range (but
// inside the region under it), without its rights, by the STag of an
// earlier binding or of an unbound window, and Sends with Invalidate of
// windows that may not be invalidated. A window's STag is checked like a
// region's, against the window's own range and rights, so the codes are
// those of the region cases. None of them changes the windows, so the
// cases may run in any order against one responder.
func windowCases() []*Case {
	win := func(i int) func(*Session) Region { return func(s *Session) Region { return s.slot(i) } }
	write := func(r func(*Session) Region, off int64, n int) func(*Session) error {
		return func(s *Session) error {
			w := r(s)
			return s.SendOffending(Tagged(s.RV, wire.OpWrite, true, w.STag, uint64(int64(w.TO)+off), pattern(n)))
		}
	}
	read := func(r func(*Session) Region, off int64, n uint32) func(*Session) error {
		return func(s *Session) error {
			w := r(s)
			req := wire.ReadRequest{SinkSTag: 0x00DA7A01, Size: n, SrcSTag: w.STag, SrcTO: uint64(int64(w.TO) + off)}
			return s.SendOffending(ReadRequest(s.RV, s.NextMSN(wire.QNReadReq), req))
		}
	}
	atomic := func(r func(*Session) Region, off int64) func(*Session) error {
		return func(s *Session) error {
			w := r(s)
			return s.SendOffending(AtomicRequest(s.RV, s.NextMSN(wire.QNReadReq), FetchAdd(9, w.STag, uint64(int64(w.TO)+off), 1)))
		}
	}
	sendInv := func(r func(*Session) Region) func(*Session) error {
		return func(s *Session) error {
			u := Untagged(s.RV, wire.OpSendInv, true, wire.QNSend, s.NextMSN(wire.QNSend), 0, []byte("inv"))
			putInvSTag(u.Bytes, r(s).STag)
			return s.SendOffending(u)
		}
	}
	const (
		cat    = "memory windows"
		need   = NeedWindows
		needRd = NeedWindows | NeedIRD
		needAt = NeedWindows | NeedIRD | NeedRFC7306
	)
	return []*Case{
		{
			Name: "Windows/Write-past-window-end/DDP-1-0x01", Category: cat, Needs: need,
			Spec:   "RFC 5041 §7.2, RFC 5040 §2: a tagged segment through a window that runs past the window's end (though inside the region under it): Terminate DDP/tagged 0x01 (base or bounds)",
			Script: write(win(SlotWindow), 56, 16),
			Want:   terminate(rdma.TermDDPBaseBounds, AttachDDP),
		},
		{
			Name: "Windows/Write-before-window/DDP-1-0x01", Category: cat, Needs: need,
			Spec:   "RFC 5041 §7.2, RFC 5040 §2: a tagged segment through a window that starts before the window's first byte (inside the region under it): Terminate DDP/tagged 0x01",
			Script: write(win(SlotWindow), -8, 16),
			Want:   terminate(rdma.TermDDPBaseBounds, AttachDDP),
		},
		{
			Name: "Windows/Write-read-only-window/DDP-1-0x00", Category: cat, Needs: need,
			Spec:   "RFC 5040 §5.3, §6.4 (no DDP code for access rights; the project and Linux siw use the invalid-STag code): a Write through a window bound without remote write, over a region that has it: Terminate DDP/tagged 0x00",
			Script: write(win(SlotWindowReadOnly), 0, 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Windows/Write-stale-window-STag/DDP-1-0x00", Category: cat, Needs: need,
			Spec:   "RFC 5040 §2, §5.2: a window bound again has a new STag; its earlier one is invalid at once: Terminate DDP/tagged 0x00",
			Script: write(win(SlotWindowStale), 0, 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Windows/Write-unbound-window/DDP-1-0x00", Category: cat, Needs: need,
			Spec:   "RFC 5040 §2: the STag of a window that is not bound names no memory: Terminate DDP/tagged 0x00",
			Script: write(win(SlotWindowUnbound), 0, 16),
			Want:   terminate(rdma.TermDDPInvalidSTag, AttachDDP),
		},
		{
			Name: "Windows/Read-past-window-end/RDMAP-1-0x01", Category: cat, Needs: needRd,
			Spec:   "RFC 5040 §7.1: a Read Request through a window past the window's end (inside the region under it): Terminate RDMAP/remote protection 0x01",
			Script: read(win(SlotWindow), 32, 64),
			Want:   terminate(rdma.TermRDMAPBaseBounds, AttachRDMA),
		},
		{
			Name: "Windows/Read-stale-window-STag/RDMAP-1-0x00", Category: cat, Needs: needRd,
			Spec:   "RFC 5040 §7.1: a Read Request naming the STag of a window's earlier binding: Terminate RDMAP/remote protection 0x00",
			Script: read(win(SlotWindowStale), 0, 16),
			Want:   terminate(rdma.TermRDMAPInvalidSTag, AttachRDMA),
		},
		{
			Name: "Windows/Read-unbound-window/RDMAP-1-0x00", Category: cat, Needs: needRd,
			Spec:   "RFC 5040 §7.1: a Read Request naming an unbound window's STag: Terminate RDMAP/remote protection 0x00",
			Script: read(win(SlotWindowUnbound), 0, 16),
			Want:   terminate(rdma.TermRDMAPInvalidSTag, AttachRDMA),
		},
		{
			Name: "Windows/Atomic-read-only-window/RDMAP-1-0x02", Category: cat, Needs: needAt,
			Spec:   "RFC 7306 §8.1: an Atomic Request through a window bound without remote atomic (over a region that may have it): Terminate RDMAP/remote protection 0x02",
			Script: atomic(win(SlotWindowReadOnly), 0),
			Want:   terminate(rdma.TermRDMAPAccessRights, AttachDDP),
		},
		{
			Name: "Windows/Atomic-past-window-end/RDMAP-1-0x01", Category: cat, Needs: needAt,
			Spec:   "RFC 7306 §8.1: an Atomic target just past a window's end (inside the region under it): Terminate RDMAP/remote protection 0x01",
			Script: atomic(win(SlotWindow), 64),
			Want:   terminate(rdma.TermRDMAPBaseBounds, AttachDDP),
		},
		{
			Name: "Windows/Atomic-stale-window-STag/RDMAP-1-0x00", Category: cat, Needs: needAt,
			Spec:   "RFC 7306 §8.1: an Atomic Request naming the STag of a window's earlier binding: Terminate RDMAP/remote protection 0x00",
			Script: atomic(win(SlotWindowStale), 0),
			Want:   terminate(rdma.TermRDMAPInvalidSTag, AttachDDP),
		},
		{
			Name: "Windows/Send-with-Invalidate-type-1-window/RDMAP-1-0x09", Category: cat, Needs: need,
			Spec:   "RFC 5040 §7.1 (\"STag cannot be invalidated\", a remote protection error as for a region not remotely invalidatable): a type 1 window cannot be invalidated: Terminate RDMAP/remote protection 0x09",
			Script: sendInv(win(SlotWindowReadOnly)),
			Want:   terminate(rdma.TermRDMAPProtInvalidate, AttachDDP),
		},
		{
			Name: "Windows/Send-with-Invalidate-window-without-right/RDMAP-1-0x09", Category: cat, Needs: need,
			Spec:   "RFC 5040 §7.1 (the project's rule: a type 2 window is remotely invalidatable only if bound with remote invalidate, docs/memory-windows.md): Terminate RDMAP/remote protection 0x09",
			Script: sendInv(win(SlotWindow)),
			Want:   terminate(rdma.TermRDMAPProtInvalidate, AttachDDP),
		},
		{
			Name: "Windows/Send-with-Invalidate-stale-window-STag/RDMAP-2-0x09", Category: cat, Needs: need,
			Spec:   "RFC 5040 §7.1: a Send with Invalidate naming a window's earlier STag, which is not valid: Terminate RDMAP/remote operation 0x09",
			Script: sendInv(win(SlotWindowStale)),
			Want:   terminate(rdma.TermRDMAPOpInvalidate, AttachDDP),
		},
		{
			Name: "Windows/Write-within-window/accepted", Category: cat, Needs: need,
			Spec: "RFC 5040 §2, §4.3: a Write inside a bound window with remote write is placed in the region under it (control case)",
			Script: func(s *Session) error {
				w := s.slot(SlotWindow)
				return s.Send(Tagged(s.RV, wire.OpWrite, true, w.STag, w.TO, pattern(64)))
			},
			Want: accepted,
		},
	}
}
