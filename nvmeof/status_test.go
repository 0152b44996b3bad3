package nvmeof

import (
	"errors"
	"fmt"
	"testing"
)

func TestStatusErrorMessage(t *testing.T) {
	for _, c := range []struct {
		sf   uint16
		want string
	}{
		{0x0080, "nvmeof: LBA Out of Range (SCT 0, SC 0x80)"},
		{0x4002, "nvmeof: Invalid Field in Command (SCT 0, SC 0x02, DNR)"},
		{0x4182, "nvmeof: Connect Invalid Parameters (SCT 1, SC 0x82, DNR)"},
		{0x0281, "nvmeof: Unrecovered Read Error (SCT 2, SC 0x81)"},
		{0x07c0, "nvmeof: status (SCT 7, SC 0xc0)"},
	} {
		e := NewStatusError(c.sf)
		if e == nil || e.Error() != c.want {
			t.Errorf("NewStatusError(%#x) = %v, want %q", c.sf, e, c.want)
		}
		if got := e.StatusField(); got != c.sf {
			t.Errorf("StatusField() = %#x, want %#x", got, c.sf)
		}
	}
}

func TestStatusErrorSuccessIsNil(t *testing.T) {
	if e := NewStatusError(0); e != nil {
		t.Fatalf("NewStatusError(0) = %v, want nil", e)
	}
	if e := NewStatusError(0x4000); e != nil { // DNR on a success: still success
		t.Fatalf("NewStatusError(0x4000) = %v, want nil", e)
	}
}

func TestStatusErrorIs(t *testing.T) {
	e := NewStatusError(0x6080) // LBA Out of Range, More, DNR
	e.Opcode, e.QID = 0x02, 3
	err := fmt.Errorf("read: %w", e)
	if !errors.Is(err, ErrLBAOutOfRange) {
		t.Error("errors.Is(LBA out of range, ErrLBAOutOfRange) = false")
	}
	if errors.Is(err, ErrCapacityExceeded) {
		t.Error("errors.Is(LBA out of range, ErrCapacityExceeded) = true")
	}
	if !e.DNR || !e.More || e.Temporary() {
		t.Errorf("DNR %v More %v Temporary %v", e.DNR, e.More, e.Temporary())
	}
	var se *StatusError
	if !errors.As(err, &se) || se.SC != 0x80 || se.SCT != 0 {
		t.Errorf("errors.As: %+v", se)
	}
	// Same SC, other SCT: not the same status.
	if errors.Is(NewStatusError(0x0180), ErrLBAOutOfRange) {
		t.Error("SCT 1 SC 0x80 matched ErrLBAOutOfRange")
	}
	if !errors.Is(NewStatusError(0x0180), ErrIncompatibleFormat) {
		t.Error("SCT 1 SC 0x80 did not match ErrIncompatibleFormat")
	}
}

func TestSentinelsHaveNames(t *testing.T) {
	for _, e := range []*StatusError{ErrInvalidOpcode, ErrInvalidField, ErrInvalidNamespace,
		ErrLBAOutOfRange, ErrConnectInvalidHost, ErrWriteFault, ErrCommandAbortedByHost} {
		if e.Name() == "" {
			t.Errorf("sentinel SCT %d SC %#x has no name", e.SCT, e.SC)
		}
	}
}
