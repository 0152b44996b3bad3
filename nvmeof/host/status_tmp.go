package host

import "fmt"

// statusError is the error of a completion with a status other than
// success. TEMPORARY until nvmeof.StatusError lands.
func statusError(r cqe) error {
	return fmt.Errorf("nvmeof: status %#x", r.status)
}
