package nvme

import "strconv"

// LengthError reports a buffer too short for the structure being decoded
// or encoded.
type LengthError struct {
	What string // the structure, e.g. "submission queue entry"
	Need int    // the octets it takes
	Got  int    // the octets there were
}

// Error implements error.
func (e *LengthError) Error() string {
	return "nvme: " + e.What + " needs " + strconv.Itoa(e.Need) + " octets, got " + strconv.Itoa(e.Got)
}

// checkLen returns a *LengthError unless len(b) >= need.
func checkLen(b []byte, need int, what string) error {
	if len(b) < need {
		return &LengthError{What: what, Need: need, Got: len(b)}
	}
	return nil
}
