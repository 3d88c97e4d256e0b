package doctor

import (
	"fmt"
	"net"

	"github.com/rdmarun/rdmarun/rdma"
)

// checkGID says which GID a test's gid_index auto chooses and why, using
// the chooser tests use (rdma.Port.SelectGID).
func checkGID(t *target) Check {
	c := t.portCheck("gid.roce_v2_ipv4", "a RoCE v2 GID of an IPv4 address, chosen by gid_index auto")
	if err := t.dev.gidErrs[t.port.Num]; err != nil {
		c.Status, c.Found = CannotTell, "gids: "+err.Error()
		return c
	}
	if !t.roce() {
		c.Expected = "a populated GID"
		c.Status, c.Found = NotApplicable, "InfiniBand: tests address the port by LID and GID index 0"
		if t.iwarp() {
			c.Status, c.Found = NotApplicable, "iWARP: the CM reaches the port by its netdev's IP address, not by a GID"
		}
		if len(t.port.GIDs) == 0 {
			c.Status, c.Found = Fail, "no populated GID"
			c.Cost = "tests cannot address the port"
		}
		return c
	}
	g, err := t.port.SelectGID(rdma.AutoGIDIndex)
	if err != nil {
		c.Status, c.Found = Fail, "no populated GID"
		c.Cost = "RoCE tests cannot address the port"
		c.Fix = "give the netdev an IP address and bring it up"
		return c
	}
	c.Found = fmt.Sprintf("auto chooses index %d, %s %s", g.Index, g.Type, g.GID)
	if g.Netdev != "" {
		c.Found += " on " + g.Netdev
	}
	if net.IP(g.GID).To4() != nil && g.Type == rdma.GIDTypeRoCEv2 {
		c.Status = OK
		c.Found += " (IPv4 RoCE v2 first)"
		return c
	}
	c.Status = Warn
	c.Cost = "no IPv4 RoCE v2 GID: the chosen one may not cross a router, and peers on IPv4 cannot reach it"
	c.Fix = "give the netdev an IPv4 address: the kernel adds a RoCE v2 GID for each address"
	return c
}
