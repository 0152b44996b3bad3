package fpdu

import "github.com/goiwarp/iwarp/internal/freelist"

// Receive staging (see Reader): sizes and the shared pool.
const (
	// stageSize is the size of a staging buffer: one bulk read brings up
	// to this many octets, many small FPDUs at once.
	stageSize = 64 << 10
	// directMin is the smallest Read served straight from the socket when
	// nothing is staged; smaller ones go through a bulk read and a copy,
	// which is cheaper for them than a syscall each (DESIGN.md).
	directMin = 8 << 10
	// lookahead is how far past what is needed a read goes while a large
	// FPDU is in progress: enough for the trailer, the next ULPDU_Length
	// and a DDP/RDMAP header, not so far as to stage its payload.
	lookahead = 64
)

// stagePool holds the staging buffers of Readers with nothing staged; it
// retains up to 64 of them (4 MiB).
var stagePool = freelist.New(64, func() *[]byte {
	b := make([]byte, stageSize)
	return &b
})

// stage is a Reader's staging buffer: buf[r:w] holds received octets not
// yet consumed. buf is taken from the pool only while it holds octets (or
// a read into it is in progress), so idle connections stay small.
type stage struct {
	p    *[]byte
	buf  []byte
	r, w int
}

// take makes sure a staging buffer is held.
func (s *stage) take() {
	if s.p == nil {
		s.p = stagePool.Get()
		s.buf = *s.p
	}
}

// drop returns the staging buffer to the pool, discarding its contents.
func (s *stage) drop() {
	if s.p != nil {
		stagePool.Put(s.p)
		s.p, s.buf = nil, nil
	}
	s.r, s.w = 0, 0
}
