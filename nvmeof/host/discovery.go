package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// Bounds of reading the discovery log page (NVMe over Fabrics §5.3).
const (
	// maxDiscoveryEntries bounds the records read, whatever NUMREC says.
	maxDiscoveryEntries = 4096
	// discoveryTries bounds the re-reads when the log changes (GENCTR)
	// while it is read.
	discoveryTries = 5
)

// DiscoveryEntry is one record of a discovery controller's log page: a
// subsystem port (NVMe over Fabrics §5.4, Figure "Discovery Log Page
// Entry").
type DiscoveryEntry struct {
	// TransportType is TRTYPE: "rdma", "fc", "tcp", "loop", or its number.
	TransportType string
	// AddressFamily is ADRFAM: "ipv4", "ipv6", "ib", "fc", "loop", or
	// its number.
	AddressFamily string
	// SubsystemType is SUBTYPE: "referral" (another discovery service),
	// "nvm", "current discovery", or its number.
	SubsystemType string
	// PortID and ControllerID are PORTID and CNTLID (0xFFFF: any
	// controller, the dynamic model).
	PortID, ControllerID uint16
	// AdminMaxSQSize is ASQSZ, the admin queue's largest size.
	AdminMaxSQSize uint16
	// Address and ServiceID are TRADDR and TRSVCID (for RDMA and TCP the
	// IP address and the port).
	Address, ServiceID string
	// SubsystemNQN is SUBNQN.
	SubsystemNQN string
}

// DiscoveryLog reads the discovery log page of a discovery controller
// (ErrNotSupported for any other): the log's header, then its records,
// again if the log changed meanwhile (its generation counter).
func (c *Controller) DiscoveryLog(ctx context.Context) ([]DiscoveryEntry, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if !c.info.Discovery {
		return nil, fmt.Errorf("%w: the discovery log of an NVM subsystem's controller", ErrNotSupported)
	}
	hdr := make([]byte, nvme.DiscoveryHeaderLen)
	for range discoveryTries {
		if err := c.getLogPage(ctx, nvme.LogDiscovery, 0, hdr); err != nil {
			return nil, err
		}
		gen := binary.LittleEndian.Uint64(hdr[0:])
		numrec := binary.LittleEndian.Uint64(hdr[8:])
		if numrec > maxDiscoveryEntries {
			return nil, fmt.Errorf("%w: a discovery log of %d records", ErrProtocol, numrec)
		}
		buf := make([]byte, nvme.DiscoveryHeaderLen+int(numrec)*nvme.DiscoveryEntryLen)
		if err := c.getLogPage(ctx, nvme.LogDiscovery, 0, buf); err != nil {
			return nil, err
		}
		log, err := nvme.DecodeDiscoveryLog(buf)
		if err != nil {
			return nil, fmt.Errorf("%w: discovery log: %w", ErrProtocol, err)
		}
		if log.GENCTR != gen || log.NUMREC != numrec {
			continue // changed between the two reads
		}
		out := make([]DiscoveryEntry, len(log.Entries))
		for i := range log.Entries {
			out[i] = publicEntry(&log.Entries[i])
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: the discovery log kept changing while read", ErrProtocol)
}

// publicEntry converts a decoded discovery log entry.
func publicEntry(e *nvme.DiscoveryEntry) DiscoveryEntry {
	return DiscoveryEntry{
		TransportType:  name(e.TRTYPE, "", "rdma", "fc", "tcp"),
		AddressFamily:  name(e.ADRFAM, "", "ipv4", "ipv6", "ib", "fc"),
		SubsystemType:  name(e.SUBTYPE, "", "referral", "nvm", "current discovery"),
		PortID:         e.PORTID,
		ControllerID:   e.CNTLID,
		AdminMaxSQSize: e.ASQSZ,
		ServiceID:      e.TRSVCID,
		SubsystemNQN:   e.SUBNQN,
		Address:        e.TRADDR,
	}
}

// name returns names[v] where there is one; 254 is "loop" for TRTYPE and
// ADRFAM (the intra-host transport).
func name(v uint8, names ...string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	if v == 254 {
		return "loop"
	}
	return strconv.Itoa(int(v))
}
