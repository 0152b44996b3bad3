package target

import (
	"net"
	"strconv"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// logPageLength checks a Get Log Page command (NVMe Base 1.4 §5.14): a
// log page the controller has, a dword-aligned offset (LPA's extended
// data bit is set) inside the page, at most MDTS bytes.
func logPageLength(q *queue, c *command) (int, nvme.Status) {
	g := c.cmd.GetLogPage()
	size := q.logSize(g.LID)
	switch {
	case size == 0:
		return 0, nvme.StatusInvalidLogPage.WithDNR()
	case g.Offset%4 != 0, g.Offset > uint64(size), g.Length() > uint64(q.t.s.maxTransfer):
		return 0, nvme.StatusInvalidField.WithDNR()
	}
	return int(g.Length()), nvme.StatusSuccess
}

// logSize returns the size of log page lid on this queue's controller,
// or 0 if it has none.
func (q *queue) logSize(lid uint8) int {
	if q.ctrl.disc {
		if lid == nvme.LogDiscovery {
			return nvme.DiscoveryHeaderLen + nvme.DiscoveryEntryLen
		}
		return 0
	}
	switch lid {
	case nvme.LogErrorInfo:
		return nvme.ErrorInfoLen // ELPE 0: one entry, never used
	case nvme.LogSMART:
		return nvme.SMARTLogLen
	case nvme.LogFirmwareSlot:
		return nvme.FirmwareSlotLen
	case nvme.LogChangedNSList:
		return nvme.ChangedNSLen
	case nvme.LogCmdEffects:
		return nvme.CmdEffectsLen
	}
	return 0
}

// execGetLogPage copies the asked part of the log page into c.out; the
// bytes past the page's end read as zeros.
func execGetLogPage(q *queue, c *command) nvme.Status {
	g := c.cmd.GetLogPage()
	page := make([]byte, q.logSize(g.LID))
	var err error
	switch g.LID {
	case nvme.LogSMART:
		l := q.t.smartLog()
		err = l.Encode(page)
	case nvme.LogFirmwareSlot:
		f := nvme.FirmwareSlot{AFI: 1}
		f.FRS[0] = firmwareRevision
		err = f.Encode(page)
	case nvme.LogCmdEffects:
		err = commandEffects.Encode(page)
	case nvme.LogDiscovery:
		l := q.discoveryLog()
		err = l.Encode(page)
	}
	if err != nil {
		return nvme.StatusInternalError
	}
	n := copy(c.out, page[g.Offset:])
	clear(c.out[n:])
	c.outLen = len(c.out)
	return nvme.StatusSuccess
}

// commandEffects is the Commands Supported and Effects log (NVMe Base 1.4
// §5.14.1.5): the commands of the admin and I/O tables, with the logical
// block content change of those that write.
var commandEffects = func() *nvme.CmdEffects {
	var e nvme.CmdEffects
	for _, op := range []uint8{nvme.AdminGetLogPage, nvme.AdminIdentify, nvme.AdminAbort, nvme.AdminSetFeatures,
		nvme.AdminGetFeatures, nvme.AdminAsyncEvent, nvme.AdminKeepAlive} {
		e.Admin[op] = nvme.EffectCSUPP
	}
	e.IO[nvme.NVMFlush] = nvme.EffectCSUPP
	e.IO[nvme.NVMRead] = nvme.EffectCSUPP
	for _, op := range []uint8{nvme.NVMWrite, nvme.NVMWriteZeroes, nvme.NVMDatasetMgmt} {
		e.IO[op] = nvme.EffectCSUPP | nvme.EffectLBCC
	}
	return &e
}()

// discoveryLog returns the discovery log of the discovery controller
// (NVMe-oF 1.1 §5.3): one entry, the subsystem at the address the host
// reached the discovery controller on (the listener may be bound to every
// address), over RDMA with the RDMA_CM and SQ flow control optional.
func (q *queue) discoveryLog() nvme.DiscoveryLog {
	host, port, _ := net.SplitHostPort(q.local)
	fam := nvme.AdrFamIPv4
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		fam = nvme.AdrFamIPv6
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 {
		port = strconv.Itoa(4420)
	}
	e := nvme.DiscoveryEntry{TRTYPE: nvme.TRTypeRDMA, ADRFAM: fam, SUBTYPE: nvme.SubTypeNVM,
		TREQ: nvme.TReqNotSpecified | nvme.TReqSQFlowDisableOK, PORTID: 1, CNTLID: nvme.CNTLIDDynamic,
		ASQSZ: adminQueueDepth, TRSVCID: port, SUBNQN: q.t.s.nqn, TRADDR: host,
		TSAS: nvme.RDMATSAS{QPTYPE: nvme.RDMAQPTypeConnected, PRTYPE: nvme.RDMAPRTypeNone, CMS: nvme.RDMACMSRDMACM}.Encode()}
	return nvme.DiscoveryLog{GENCTR: 1, NUMREC: 1, Entries: []nvme.DiscoveryEntry{e}}
}

// smartLog returns the SMART / Health Information log (NVMe Base 1.4
// §5.14.1.2): no warning, room temperature, full spare, and the I/O the
// target has served.
func (t *Target) smartLog() nvme.SMARTLog {
	return nvme.SMARTLog{Temperature: 298, AvailSpare: 100, AvailSpareThresh: 10,
		DataUnitsRead: (t.stats.bytesRead.Load() + 511999) / 512000, DataUnitsWritten: (t.stats.bytesWritten.Load() + 511999) / 512000,
		HostReads: t.stats.reads.Load(), HostWrites: t.stats.writes.Load(), PowerCycles: 1}
}
