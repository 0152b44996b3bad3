package nvme

import "testing"

// TestNoDataCommandsCarryNullKeyedSGL: the builders of commands without
// data describe "no data" as Linux's host does (a null Keyed SGL Data
// Block), which Linux's target requires; an all-zero DPTR is an SGL Data
// Block of subtype Address, which it refuses with Invalid Field.
func TestNoDataCommandsCarryNullKeyedSGL(t *testing.T) {
	cmds := map[string]Command{
		"Property Get": PropertyGetCommand(1, PropCAP, 8),
		"Property Set": PropertySetCommand(2, PropCC, 4, 1),
		"Disconnect":   DisconnectCommand(3),
		"Get Features": Feature{FID: FeatNumQueues}.GetCommand(4, 0),
		"Set Features": Feature{FID: FeatNumQueues, Value: 1}.SetCommand(5, 0),
	}
	for name, c := range cmds {
		if c.DPTR != NullSGL() {
			t.Errorf("%s: DPTR % x, want the null keyed descriptor % x", name, c.DPTR, NullSGL())
		}
		if kind, st := c.DPTR.Classify(); kind != SGLKeyed || st != StatusSuccess || c.DPTR.Length() != 0 {
			t.Errorf("%s: DPTR classifies as %v/%v length %d", name, kind, st, c.DPTR.Length())
		}
	}
}
