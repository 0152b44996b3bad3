package host

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp/internal/nvme"
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
	buf := make([]byte, nvme.IdentifyLen)
	if err := c.identifyCNS(ctx, nvme.CNSNamespace, nsid, buf); err != nil {
		return nil, err
	}
	id, err := nvme.DecodeNamespace(buf)
	if err != nil {
		return nil, fmt.Errorf("%w: Identify Namespace: %w", ErrProtocol, err)
	}
	in := NamespaceInfo{ID: nsid, Blocks: id.NSZE, Capacity: id.NCAP, NGUID: id.NGUID, EUI64: id.EUI64}
	if in.Blocks == 0 {
		return nil, fmt.Errorf("%w: namespace %d is not active", ErrNotSupported, nsid)
	}
	f := id.FormatIndex()
	bs := id.BlockSize()
	if f > int(id.NLBAF) || bs < 512 || bs > 1<<24 {
		return nil, fmt.Errorf("%w: namespace %d: LBA format %d (of %d) of %d-byte blocks", ErrProtocol, nsid, f, int(id.NLBAF)+1, bs)
	}
	in.BlockSize, in.MetadataSize = int(bs), int(id.LBAF[f].MS)
	if in.MetadataSize != 0 {
		return nil, fmt.Errorf("%w: namespace %d has %d bytes of metadata per block", ErrNotSupported, nsid, in.MetadataSize)
	}
	if in.BlockSize > c.maxXfer {
		return nil, fmt.Errorf("%w: namespace %d's blocks (%d bytes) exceed the transfer limit", ErrNotSupported, nsid, in.BlockSize)
	}
	return &Namespace{c: c, info: in}, nil
}

// ActiveNamespaces lists the active namespace IDs (Identify, CNS 02h), in
// increasing order, up to 1024 of them.
func (c *Controller) ActiveNamespaces(ctx context.Context) ([]uint32, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	buf := make([]byte, nvme.IdentifyLen)
	if err := c.identifyCNS(ctx, nvme.CNSActiveNSList, 0, buf); err != nil {
		return nil, err
	}
	return nvme.DecodeNSList(nil, buf)
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
	return n.rw(ctx, nvme.NVMRead, p, lba)
}

// WriteAt writes p, a whole number of blocks, from block lba on. p is
// copied before WriteAt returns (and may be reused at once, whatever the
// outcome). A write that ended with an error may have written any part of
// p.
func (n *Namespace) WriteAt(ctx context.Context, p []byte, lba uint64) error {
	return n.rw(ctx, nvme.NVMWrite, p, lba)
}

// Flush asks the controller to make the namespace's written data
// non-volatile (Flush command).
func (n *Namespace) Flush(ctx context.Context) error {
	return n.simple(ctx, nvme.Command{Opcode: nvme.NVMFlush, NSID: n.info.ID})
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
		cmd := nvme.RW{SLBA: lba, NLB: uint16(nb - 1)}.Command(nvme.NVMWriteZeroes, 0, n.info.ID, nvme.SGL{})
		if err := n.simple(ctx, cmd); err != nil {
			return err
		}
		lba, blocks = lba+nb, blocks-nb
	}
	return nil
}

// simple runs a command without data on the next I/O queue.
func (n *Namespace) simple(ctx context.Context, cmd nvme.Command) error {
	if err := n.c.usable(); err != nil {
		return err
	}
	q, err := n.c.pick()
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, cmd, nil, nil)
	return err
}

// check reports whether blocks blocks from lba lie in the namespace.
func (n *Namespace) check(lba, blocks uint64) error {
	if blocks == 0 || lba >= n.info.Blocks || blocks > n.info.Blocks-lba {
		return fmt.Errorf("%w: %d blocks from block %d of a namespace of %d", ErrRange, blocks, lba, n.info.Blocks)
	}
	return nil
}
