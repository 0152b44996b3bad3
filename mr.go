package iwarp

import (
	"context"
	"errors"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Access is a set of access rights of registered memory or a memory
// window (RFC 5040 §2.1; see rdma.Access for each right). Local read is
// always allowed.
type Access = rdma.Access

// Access rights.
const (
	AccessLocalWrite       = rdma.AccessLocalWrite
	AccessRemoteRead       = rdma.AccessRemoteRead
	AccessRemoteWrite      = rdma.AccessRemoteWrite
	AccessRemoteAtomic     = rdma.AccessRemoteAtomic
	AccessRemoteInvalidate = rdma.AccessRemoteInvalidate
	AccessMWBind           = rdma.AccessMWBind
)

// MR is a registered memory region: a []byte the caller owns, exposed to
// the RNIC (and, with remote access, to peers) under an STag. The caller
// must not reuse the buffer for anything else until Deregister returns.
type MR struct {
	pd *PD
	r  *mem.Region
}

// RegisterMemory registers buf with the given access rights. The region's
// tagged offsets start at 0: TO n addresses buf[n].
func (pd *PD) RegisterMemory(buf []byte, access Access) (*MR, error) {
	r, err := pd.dev.table.Register(pd.id, buf, access, 0)
	if err != nil {
		return nil, wrapAs(ErrInvalidBuffer, err)
	}
	return &MR{pd: pd, r: r}, nil
}

// STag returns the region's Steering Tag, what a peer names it by (the
// "rkey" of verbs).
func (mr *MR) STag() uint32 { return uint32(mr.r.STag()) }

// TO returns the tagged offset of the region's first byte (the "addr" of
// verbs).
func (mr *MR) TO() uint64 { return mr.r.Base() }

// Len returns the region's length.
func (mr *MR) Len() int { return mr.r.Len() }

// Bytes returns the registered buffer.
func (mr *MR) Bytes() []byte { return mr.r.Bytes() }

// Access returns the region's access rights.
func (mr *MR) Access() Access { return mr.r.Access() }

// PD returns the region's protection domain.
func (mr *MR) PD() *PD { return mr.pd }

// Remote describes the whole region for a peer.
func (mr *MR) Remote() RemoteBuffer {
	return RemoteBuffer{STag: mr.STag(), TO: mr.TO(), Len: uint32(mr.Len())}
}

// RemoteSlice describes n bytes at offset off for a peer.
func (mr *MR) RemoteSlice(off, n int) (RemoteBuffer, error) {
	if off < 0 || n < 0 || off > mr.Len() || mr.Len()-off < n {
		return RemoteBuffer{}, ErrRange
	}
	return RemoteBuffer{STag: mr.STag(), TO: mr.TO() + uint64(off), Len: uint32(n)}, nil
}

// SGE returns a scatter/gather element for n bytes at offset off, under
// the region's current STag (after a Rekey, make new ones: a post refuses
// the old STag). Whether off and n lie in the region is checked when the
// SGE is posted.
func (mr *MR) SGE(off, n int) SGE {
	if off < 0 || n < 0 || uint64(n) > 1<<32-1 {
		// Not representable: an SGE that every post refuses (ErrInvalidWR).
		return SGE{STag: mr.STag(), Offset: ^uint64(0), Length: ^uint32(0)}
	}
	return SGE{STag: mr.STag(), Offset: uint64(off), Length: uint32(n)}
}

// Deregister invalidates the STag at once for new arrivals, waits until no
// placement into the buffer is in flight (bounded by ctx), and frees the
// region. When it returns nil no byte can land in the buffer any more.
func (mr *MR) Deregister(ctx context.Context) error {
	return wrapAs(nil, mr.pd.dev.table.Deregister(ctx, mr.r))
}

// Rekey gives the region a new STag (a new random key over the same table
// index) with the given access rights, and makes it valid again if it was
// invalidated (a "fast-register" of the same memory): the old STag fails at
// once for new arrivals, and Rekey waits, like Deregister and bounded by
// ctx, until no placement or transmission through the old STag is in
// flight. When it returns nil no byte moves through the old registration
// any more (docs/semantics.md rule 6). It returns the new STag; if ctx
// ends first, the new STag is valid and the error says what was revoked.
func (mr *MR) Rekey(ctx context.Context, access Access) (uint32, error) {
	s, err := mr.pd.dev.table.RekeyContext(ctx, mr.r, access)
	if err != nil {
		var rev *mem.RevokedError
		if errors.As(err, &rev) {
			return uint32(s), wrapAs(nil, err)
		}
		return 0, wrapAs(ErrInvalidBuffer, err)
	}
	return uint32(s), nil
}

// Valid reports whether the region's STag is currently valid (not
// invalidated locally or by the peer).
func (mr *MR) Valid() bool { return mr.r.Valid() }

// Close deregisters the region, waiting as long as a placement into it is
// in flight (see Deregister).
func (mr *MR) Close() error { return mr.Deregister(context.Background()) }
