package host

import (
	"encoding/binary"
)

// Status codes the fake target answers with (SCT<<8 | SC).
const (
	scInvalidOpcode = 0x01
	scInvalidField  = 0x02
	scDataXfer      = 0x04
	scLBARange      = 0x80
)

// exec runs one command and returns its response's dwords and status.
func (s *fakeQueue) exec(sqe, inline []byte) (dw0, dw1 uint32, status uint16) {
	le := binary.LittleEndian
	ft := s.ft
	op := sqe[0]
	if op == opFabrics {
		switch sqe[4] {
		case fcConnect:
			if _, err := s.pull(sqe, inline); err != nil {
				return 0, 0, scDataXfer
			}
			return 1, 0, 0
		case fcPropertyGet:
			ft.mu.Lock()
			defer ft.mu.Unlock()
			switch le.Uint32(sqe[44:]) {
			case propCAP:
				v := uint64(1023) | 1<<24 // MQES, TO 1 (1 s)
				return uint32(v), uint32(v >> 32), 0
			case propVS:
				return 0x10300, 0, 0
			case propCC:
				return ft.cc, 0, 0
			case propCSTS:
				return ft.csts, 0, 0
			}
			return 0, 0, scInvalidField
		case fcPropertySet:
			ft.mu.Lock()
			defer ft.mu.Unlock()
			ft.cc = le.Uint32(sqe[48:])
			ft.csts = 0
			if ft.cc&ccEnable != 0 {
				ft.csts |= cstsRDY
			}
			if ft.cc&ccSHMask != 0 {
				ft.csts |= cstsSHDone
			}
			return 0, 0, 0
		}
		return 0, 0, scInvalidOpcode
	}
	if s.qid == 0 {
		return s.admin(sqe)
	}
	nsid := le.Uint32(sqe[4:])
	lba := le.Uint64(sqe[40:])
	nlb := int(le.Uint16(sqe[48:])) + 1
	if op != opFlush && (nsid != 1 || (lba+uint64(nlb))*uint64(ft.bs) > uint64(len(ft.disk))) {
		return 0, 0, scLBARange
	}
	off, n := int(lba)*ft.bs, nlb*ft.bs
	switch op {
	case opFlush:
		return 0, 0, 0
	case opRead:
		if n > s.data.Len() {
			return 0, 0, scDataXfer
		}
		ft.mu.Lock()
		copy(s.data.Bytes(), ft.disk[off:off+n])
		ft.mu.Unlock()
		if s.pushData(sqe, n) != nil {
			return 0, 0, scDataXfer
		}
	case opWrite:
		p, err := s.pull(sqe, inline)
		if err != nil || len(p) != n {
			return 0, 0, scDataXfer
		}
		ft.mu.Lock()
		copy(ft.disk[off:], p)
		ft.mu.Unlock()
	case opWriteZeroes:
		ft.mu.Lock()
		clear(ft.disk[off : off+n])
		ft.mu.Unlock()
	default:
		return 0, 0, scInvalidOpcode
	}
	return 0, 0, 0
}

// admin runs an admin command.
func (s *fakeQueue) admin(sqe []byte) (dw0, dw1 uint32, status uint16) {
	le := binary.LittleEndian
	ft := s.ft
	switch sqe[0] {
	case opKeepAlive:
		select {
		case ft.kas <- struct{}{}:
		default:
		}
		return 0, 0, 0
	case opSetFeatures:
		if le.Uint32(sqe[40:])&0xFF != featNumQueues {
			return 0, 0, scInvalidField
		}
		n := min(le.Uint32(sqe[44:])&0xFFFF, 3) // at most 4 queues
		return n | n<<16, 0, 0
	case opIdentify:
		b := make([]byte, identifyLen)
		switch le.Uint32(sqe[40:]) & 0xFF {
		case 1:
			le.PutUint16(b[0:], 0x1b36)
			copy(b[4:24], "fake-serial         ")
			copy(b[24:64], "fake controller                         ")
			copy(b[64:72], "1.0     ")
			b[77] = ft.mdts
			b[111] = 1
			le.PutUint16(b[320:], 100)
			le.PutUint32(b[516:], 1)
			if ft.wz {
				le.PutUint16(b[520:], 1<<3)
			}
			b[525] = 1
			sgls := uint32(1<<2 | 1)
			if ft.inline > 0 {
				sgls |= 1 << 20
			}
			le.PutUint32(b[536:], sgls)
			copy(b[768:], "nqn.2024-01.test:fake")
			le.PutUint32(b[1792:], uint32((sqeLen+ft.inline)/16))
			le.PutUint32(b[1796:], 1)
		case 0:
			if le.Uint32(sqe[4:]) != 1 {
				break // inactive: all zeroes
			}
			le.PutUint64(b[0:], uint64(len(ft.disk)/ft.bs))
			le.PutUint64(b[8:], uint64(len(ft.disk)/ft.bs))
			b[128+2] = 9 // LBADS: 512
		case 2:
			le.PutUint32(b[0:], 1)
		default:
			return 0, 0, scInvalidField
		}
		if s.push(sqe, b) != nil {
			return 0, 0, scDataXfer
		}
		return 0, 0, 0
	case opGetLogPage:
		if le.Uint32(sqe[40:])&0xFF != logDiscovery {
			return 0, 0, scInvalidField
		}
		numd := int(le.Uint32(sqe[40:])>>16|le.Uint32(sqe[44:])<<16) + 1
		off := int(le.Uint64(sqe[48:]))
		log := make([]byte, discoveryHdrLen+2*discoveryEntryLen)
		le.PutUint64(log[0:], 7)
		le.PutUint64(log[8:], 2)
		for i, nqn := range []string{"nqn.2024-01.test:fake", discoveryNQN} {
			e := log[discoveryHdrLen+i*discoveryEntryLen:]
			e[0], e[1], e[2] = 1, 1, byte(2+i)
			le.PutUint16(e[4:], 1)
			le.PutUint16(e[6:], 0xFFFF)
			le.PutUint16(e[8:], 32)
			copy(e[32:64], "4420                            ")
			copy(e[256:], nqn)
			copy(e[512:], "127.0.0.1")
		}
		end := min(off+numd*4, len(log))
		if off > end {
			off = end
		}
		if s.push(sqe, log[off:end]) != nil {
			return 0, 0, scDataXfer
		}
		return 0, 0, 0
	}
	return 0, 0, scInvalidOpcode
}
