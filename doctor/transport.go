package doctor

// checkTransport names what the device speaks, which decides how its QPs
// connect and which tests it runs: on iWARP only RC through the CM, with
// no immediate data, so a scenario written for RoCE is refused there.
func checkTransport(t *target) Check {
	c := t.deviceCheck("device.transport", "InfiniBand, RoCE or iWARP: how the QPs connect and which ops run")
	c.Status, c.Found = OK, string(t.dev.Transport)
	if t.iwarp() {
		// rdmarun devices prints the whole of rdma.TransportNote; a
		// table cell takes the part a scenario meets.
		c.Found += ": RC QPs only, connected only through the CM (connect: rdma_cm); no send_imm or write_imm"
	}
	return c
}
