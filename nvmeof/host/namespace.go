package host

import (
	"context"
	"encoding/binary"
	"fmt"
)

// NVM command set opcodes (NVM Command Set §3).
const (
	opFlush       = 0x00
	opWrite       = 0x01
	opRead        = 0x02
	opWriteZeroes = 0x08
)

// NamespaceInfo is what Identify Namespace (NVM Command Set §4.1.5.1)
// reported about a namespace.
type NamespaceInfo struct {
	// ID is the namespace ID.
	ID uint32
	// Blocks is NSZE, the namespace's size in logical blocks.
	Blocks uint64
	// Capacity is NCAP, the blocks that may be allocated.
	Capacity uint64
	// BlockSize is the logical block size in bytes of the format in use
	// (FLBAS).
	BlockSize int
	// MetadataSize is the metadata bytes per block of that format; the
	// host supports only formats without metadata.
	MetadataSize int
	// NGUID and EUI64 are the namespace's globally unique identifiers
	// (zero when not reported).
	NGUID [16]byte
	EUI64 [8]byte
}

// Namespace is an NVM namespace of a controller: blocks to read and write.
// Its methods are safe for concurrent use; each command goes to the next
// I/O queue in turn.
type Namespace struct {
	c    *Controller   // immutable
	info NamespaceInfo // immutable
}

// Namespace identifies namespace nsid (Identify, CNS 00h) and returns it.
func (c *Controller) Namespace(ctx context.Context, nsid uint32) (*Namespace, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if len(c.io) == 0 {
		return nil, fmt.Errorf("%w: a discovery controller has no namespaces", ErrNotSupported)
	}
	buf := make([]byte, identifyLen)
	if err := c.identifyCNS(ctx, 0, nsid, buf); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	in := NamespaceInfo{ID: nsid, Blocks: le.Uint64(buf[0:]), Capacity: le.Uint64(buf[8:])}
	if in.Blocks == 0 {
		return nil, fmt.Errorf("%w: namespace %d is not active", ErrNotSupported, nsid)
	}
	flbas := int(buf[26]&0xF) | int(buf[26]>>5&3)<<4
	if flbas > int(buf[25]) || flbas >= 64 {
		return nil, fmt.Errorf("%w: namespace %d: FLBAS %d beyond its %d formats", ErrProtocol, nsid, flbas, int(buf[25])+1)
	}
	f := buf[128+4*flbas:]
	in.MetadataSize = int(le.Uint16(f[0:]))
	if lbads := f[2]; lbads >= 9 && lbads <= 24 {
		in.BlockSize = 1 << lbads
	} else {
		return nil, fmt.Errorf("%w: namespace %d: LBADS %d", ErrProtocol, nsid, lbads)
	}
	if in.MetadataSize != 0 {
		return nil, fmt.Errorf("%w: namespace %d has %d bytes of metadata per block", ErrNotSupported, nsid, in.MetadataSize)
	}
	if in.BlockSize > c.maxXfer {
		return nil, fmt.Errorf("%w: namespace %d's blocks (%d bytes) exceed the transfer limit", ErrNotSupported, nsid, in.BlockSize)
	}
	copy(in.NGUID[:], buf[104:120])
	copy(in.EUI64[:], buf[120:128])
	return &Namespace{c: c, info: in}, nil
}

// ActiveNamespaces lists the active namespace IDs (Identify, CNS 02h), in
// increasing order, up to 1024 of them.
func (c *Controller) ActiveNamespaces(ctx context.Context) ([]uint32, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	buf := make([]byte, identifyLen)
	if err := c.identifyCNS(ctx, 2, 0, buf); err != nil {
		return nil, err
	}
	var ids []uint32
	for i := 0; i+4 <= len(buf); i += 4 {
		id := binary.LittleEndian.Uint32(buf[i:])
		if id == 0 {
			break
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Info returns what Identify Namespace reported.
func (n *Namespace) Info() NamespaceInfo { return n.info }

// ID returns the namespace ID.
func (n *Namespace) ID() uint32 { return n.info.ID }

// BlockSize returns the logical block size in bytes.
func (n *Namespace) BlockSize() int { return n.info.BlockSize }

// Blocks returns the namespace's size in logical blocks.
func (n *Namespace) Blocks() uint64 { return n.info.Blocks }

// ReadAt reads len(p) bytes, a whole number of blocks, from block lba on.
// A transfer larger than the controller's limit is split into commands
// run a few at a time on one queue. If ctx ends first ReadAt returns its
// error; p may then hold part of the data, and no byte lands in p after
// ReadAt returned.
func (n *Namespace) ReadAt(ctx context.Context, p []byte, lba uint64) error {
	return n.rw(ctx, opRead, p, lba)
}

// WriteAt writes p, a whole number of blocks, from block lba on. p is
// copied before WriteAt returns (and may be reused at once, whatever the
// outcome). A write that ended with an error may have written any part of
// p.
func (n *Namespace) WriteAt(ctx context.Context, p []byte, lba uint64) error {
	return n.rw(ctx, opWrite, p, lba)
}

// Flush asks the controller to make the namespace's written data
// non-volatile (Flush command).
func (n *Namespace) Flush(ctx context.Context) error {
	var sqe [sqeLen]byte
	putSQEHeader(sqe[:], opFlush, n.info.ID)
	return n.simple(ctx, &sqe)
}

// WriteZeroes sets blocks blocks from lba on to zero (Write Zeroes
// command, in commands of at most 65536 blocks), where the controller
// supports it (ControllerInfo.WriteZeroes; else ErrNotSupported).
func (n *Namespace) WriteZeroes(ctx context.Context, lba, blocks uint64) error {
	if !n.c.info.WriteZeroes {
		return fmt.Errorf("%w: Write Zeroes", ErrNotSupported)
	}
	if err := n.check(lba, blocks); err != nil {
		return err
	}
	for blocks > 0 {
		nb := min(blocks, 1<<16)
		var sqe [sqeLen]byte
		putSQEHeader(sqe[:], opWriteZeroes, n.info.ID)
		putCDW(sqe[:], 10, uint32(lba))
		putCDW(sqe[:], 11, uint32(lba>>32))
		putCDW(sqe[:], 12, uint32(nb-1))
		if err := n.simple(ctx, &sqe); err != nil {
			return err
		}
		lba, blocks = lba+nb, blocks-nb
	}
	return nil
}

// simple runs a command without data on the next I/O queue.
func (n *Namespace) simple(ctx context.Context, sqe *[sqeLen]byte) error {
	if err := n.c.usable(); err != nil {
		return err
	}
	q, err := n.c.pick()
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, sqe, nil, nil)
	return err
}

// check reports whether blocks blocks from lba lie in the namespace.
func (n *Namespace) check(lba, blocks uint64) error {
	if blocks == 0 || lba >= n.info.Blocks || blocks > n.info.Blocks-lba {
		return fmt.Errorf("%w: %d blocks from block %d of a namespace of %d", ErrRange, blocks, lba, n.info.Blocks)
	}
	return nil
}
