package host

// Info returns what the controller reported about itself and what the
// association uses.
func (c *Controller) Info() ControllerInfo { return c.info }
