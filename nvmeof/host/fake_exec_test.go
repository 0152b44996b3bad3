package host

import (
	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// fakeNQN is the fake target's NVM subsystem.
const fakeNQN = "nqn.2024-01.test:fake"

// exec runs one command and returns its response's dwords and status.
func (s *fakeQueue) exec(cmd *nvme.Command, inline []byte) (dw0, dw1 uint32, status nvme.Status) {
	ft := s.ft
	if cmd.Opcode == nvme.AdminFabrics {
		switch cmd.FCType() {
		case nvme.FCTypeConnect:
			if _, err := s.pull(cmd, inline); err != nil {
				return 0, 0, nvme.StatusDataTransferError
			}
			return 1, 0, 0
		case nvme.FCTypePropertyGet:
			ft.mu.Lock()
			defer ft.mu.Unlock()
			switch cmd.Property().OFST {
			case nvme.PropCAP:
				v := nvme.CAP{MQES: 1023, CQR: true, TO: 1, CSS: nvme.CSSNVM}.Uint64()
				return uint32(v), uint32(v >> 32), 0
			case nvme.PropVS:
				return uint32(nvme.Version1_3), 0, 0
			case nvme.PropCC:
				return ft.cc.Uint32(), 0, 0
			case nvme.PropCSTS:
				return ft.csts.Uint32(), 0, 0
			}
			return 0, 0, nvme.StatusInvalidField
		case nvme.FCTypePropertySet:
			ft.mu.Lock()
			defer ft.mu.Unlock()
			ft.cc = nvme.ParseCC(uint32(cmd.Property().VALUE))
			ft.csts = nvme.CSTS{RDY: ft.cc.EN}
			if ft.cc.SHN != nvme.SHNNone {
				ft.csts.SHST = nvme.SHSTComplete
			}
			return 0, 0, 0
		}
		return 0, 0, nvme.StatusInvalidOpcode
	}
	if s.qid == 0 {
		return s.admin(cmd)
	}
	rw := cmd.RW()
	off, n := int(rw.SLBA)*ft.bs, int(rw.Blocks())*ft.bs
	if cmd.Opcode != nvme.NVMFlush && (cmd.NSID != 1 || off+n > len(ft.disk)) {
		return 0, 0, nvme.StatusLBAOutOfRange
	}
	switch cmd.Opcode {
	case nvme.NVMFlush:
		return 0, 0, 0
	case nvme.NVMRead:
		if n > s.data.Len() {
			return 0, 0, nvme.StatusDataTransferError
		}
		ft.mu.Lock()
		copy(s.data.Bytes(), ft.disk[off:off+n])
		ft.mu.Unlock()
		if s.pushData(cmd, n) != nil {
			return 0, 0, nvme.StatusDataTransferError
		}
	case nvme.NVMWrite:
		p, err := s.pull(cmd, inline)
		if err != nil || len(p) != n {
			return 0, 0, nvme.StatusDataTransferError
		}
		ft.mu.Lock()
		copy(ft.disk[off:], p)
		ft.mu.Unlock()
	case nvme.NVMWriteZeroes:
		ft.mu.Lock()
		clear(ft.disk[off : off+n])
		ft.mu.Unlock()
	default:
		return 0, 0, nvme.StatusInvalidOpcode
	}
	return 0, 0, 0
}

// admin runs an admin command.
func (s *fakeQueue) admin(cmd *nvme.Command) (dw0, dw1 uint32, status nvme.Status) {
	ft := s.ft
	switch cmd.Opcode {
	case nvme.AdminKeepAlive:
		select {
		case ft.kas <- struct{}{}:
		default:
		}
		return 0, 0, 0
	case nvme.AdminSetFeatures:
		f := cmd.Feature()
		if f.FID != nvme.FeatNumQueues {
			return 0, 0, nvme.StatusInvalidField
		}
		n := min(nvme.ParseNumQueues(f.Value).NSQ, 3) // at most 4 queues
		return nvme.NumQueues{NSQ: n, NCQ: n}.Uint32(), 0, 0
	case nvme.AdminIdentify:
		b := make([]byte, nvme.IdentifyLen)
		switch cmd.Identify().CNS {
		case nvme.CNSController:
			id := nvme.Controller{VID: 0x1b36, SN: "fake-serial", MN: "fake controller", FR: "1.0",
				MDTS: ft.mdts, CNTRLTYPE: nvme.CtrlTypeIO, KAS: 100, NN: 1, VWC: 1, SGLS: 1<<2 | 1,
				SUBNQN: fakeNQN, IOCCSZ: uint32((sqeLen + ft.inline) / 16), IORCSZ: 1, VER: nvme.Version1_3}
			if ft.wz {
				id.ONCS = 1 << 3
			}
			if ft.inline > 0 {
				id.SGLS |= 1 << 20
			}
			id.Encode(b)
		case nvme.CNSNamespace:
			if cmd.NSID == 1 {
				blocks := uint64(len(ft.disk) / ft.bs)
				ns := nvme.Namespace{NSZE: blocks, NCAP: blocks, NUSE: blocks}
				ns.LBAF[0].LBADS = 9 // 512-byte blocks
				ns.Encode(b)
			} // else inactive: all zeroes
		case nvme.CNSActiveNSList:
			nvme.EncodeNSList(b, []uint32{1}, 0)
		default:
			return 0, 0, nvme.StatusInvalidField
		}
		if s.push(cmd, b) != nil {
			return 0, 0, nvme.StatusDataTransferError
		}
		return 0, 0, 0
	case nvme.AdminGetLogPage:
		g := cmd.GetLogPage()
		if g.LID != nvme.LogDiscovery {
			return 0, 0, nvme.StatusInvalidField
		}
		log := nvme.DiscoveryLog{GENCTR: 7, NUMREC: 2}
		for i, nqn := range []string{fakeNQN, nvmeof.DiscoveryNQN} {
			log.Entries = append(log.Entries, nvme.DiscoveryEntry{TRTYPE: nvme.TRTypeRDMA, ADRFAM: nvme.AdrFamIPv4,
				SUBTYPE: nvme.SubTypeNVM + uint8(i), PORTID: 1, CNTLID: 0xFFFF, ASQSZ: 32, TRSVCID: "4420",
				SUBNQN: nqn, TRADDR: "127.0.0.1"})
		}
		b := make([]byte, log.Len())
		log.Encode(b)
		off := min(int(g.Offset), len(b))
		end := min(off+int(g.Length()), len(b))
		if s.push(cmd, b[off:end]) != nil {
			return 0, 0, nvme.StatusDataTransferError
		}
		return 0, 0, 0
	}
	return 0, 0, nvme.StatusInvalidOpcode
}
