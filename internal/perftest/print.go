package perftest

import "fmt"

const rule = "---------------------------------------------------------------------------------------\n"

// printHeader prints perftest's banner for the test.
func (s *session) printHeader() {
	role := "server"
	if s.client {
		role = "client"
	}
	own := s.data.ownRecord()
	fmt.Fprint(s.out, rule)
	fmt.Fprintf(s.out, " %s (perftest protocol, peer version %s), %s\n", s.cfg.Name(), s.peerV, role)
	fmt.Fprintf(s.out, " local: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x\n", 1, s.data.psn, own.RKey, own.VAddr)
	fmt.Fprintf(s.out, " remote: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x OutReads %d\n", s.rem.QPN, s.rem.PSN, s.rem.RKey, s.rem.VAddr, s.rem.OutReads)
	a := s.data.qp.Attributes()
	onOff := map[bool]string{false: "off", true: "on"}
	p2p := "no P2P"
	if a.P2P {
		p2p = "P2P RTR " + a.RTR
	}
	fmt.Fprintf(s.out, " data connection: %s -> %s, MPA rev %d, CRC %s, %s, IRD %d ORD %d, MULPDU %d\n",
		a.LocalAddr, a.PeerAddr, a.MPARevision, onOff[a.CRC], p2p, a.IRD, a.ORD, a.MULPDU)
	fmt.Fprint(s.out, rule)
}

// printResult prints perftest's result line (the server of a bandwidth
// test prints the client's report, as perftest does) and what was checked.
func (s *session) printResult(r *result) {
	if r.lat != nil {
		l := r.lat
		fmt.Fprintf(s.out, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n")
		fmt.Fprintf(s.out, " %-6d %-11d %-14.2f %-14.2f %-16.2f %-14.2f %-15.2f %-22.2f %.2f\n", s.cfg.Size, s.cfg.Iters, l.Min, l.Max, l.Median, l.Avg, l.Stdev, l.P99, l.P999)
	} else if r.report.Iters > 0 {
		p := r.report
		fmt.Fprintf(s.out, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n")
		fmt.Fprintf(s.out, " %-10d %-14d %-18.2f %-20.2f %.6f\n", p.Size, p.Iters, p.PeakMBps, p.AvgMBps, p.MsgRateMpps)
	}
	fmt.Fprint(s.out, rule)
	if r.verified != "" {
		fmt.Fprintf(s.out, "verified: %s\n", r.verified)
	}
	fmt.Fprintf(s.out, "%s: done\n", s.cfg.Name())
}
