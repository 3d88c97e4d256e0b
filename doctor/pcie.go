package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pcieLink is one end of a PCI function's link as sysfs shows it.
type pcieLink struct {
	gts   float64 // transfer rate per lane, GT/s
	width int     // lanes
}

// gbps is the link's data rate in 10^9 bit/s after line encoding (8b/10b
// up to 5 GT/s, 128b/130b from 8 GT/s, 242/256 FLIT at 64 GT/s), before
// the TLP headers, which take another tenth or so.
func (l pcieLink) gbps() float64 {
	enc := 128.0 / 130
	switch {
	case l.gts <= 5:
		enc = 0.8
	case l.gts >= 64:
		enc = 242.0 / 256
	}
	return l.gts * enc * float64(l.width)
}

func (l pcieLink) String() string {
	return fmt.Sprintf("%s GT/s x%d", strconv.FormatFloat(l.gts, 'f', -1, 64), l.width)
}

// parseLinkSpeed reads current_link_speed: "16.0 GT/s PCIe" on kernels
// since 5.17, "8 GT/s" before, "Unknown" without a link.
func parseLinkSpeed(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) >= 2 && f[1] == "GT/s" {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > 0 && v < 1e6 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("not of the form \"N GT/s\": %q", s)
}

// readLinks reads the current and maximum link of the PCI function.
func readLinks(pci string) (cur, maxLink pcieLink, err error) {
	var errs []string
	speed := func(file string) float64 {
		s, err := read(pci, file)
		if err != nil {
			errs = append(errs, file+": "+why(err))
			return 0
		}
		v, err := parseLinkSpeed(s)
		if err != nil {
			errs = append(errs, file+": "+err.Error())
		}
		return v
	}
	width := func(file string) int {
		s, err := read(pci, file)
		if err != nil {
			errs = append(errs, file+": "+why(err))
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v > 32 {
			errs = append(errs, fmt.Sprintf("%s: not a lane count: %q", file, s))
			return 0
		}
		return v
	}
	cur = pcieLink{speed("current_link_speed"), width("current_link_width")}
	maxLink = pcieLink{speed("max_link_speed"), width("max_link_width")}
	if len(errs) > 0 {
		return cur, maxLink, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return cur, maxLink, nil
}

func (t *target) pcieCheck(name, expected string) (Check, pcieLink, pcieLink, bool) {
	c := t.deviceCheck(name, expected)
	if t.pci == "" {
		c.Status, c.Found = NotApplicable, "no PCI link (a software device, or the kernel shows none)"
		return c, pcieLink{}, pcieLink{}, false
	}
	cur, maxLink, err := readLinks(t.pci)
	if err != nil {
		c.Status, c.Found = CannotTell, err.Error()
		return c, cur, maxLink, false
	}
	return c, cur, maxLink, true
}

func checkPCIeSpeed(t *target) Check {
	c, cur, maxLink, ok := t.pcieCheck("pcie.speed", "the device's maximum transfer rate")
	if !ok {
		return c
	}
	c.Expected = fmt.Sprintf("%s GT/s per lane (max_link_speed)", strconv.FormatFloat(maxLink.gts, 'f', -1, 64))
	c.Found = fmt.Sprintf("%s GT/s per lane", strconv.FormatFloat(cur.gts, 'f', -1, 64))
	if cur.gts >= maxLink.gts {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Cost = fmt.Sprintf("PCIe at %.0f%% of its rate: at most %.0f Gb/s instead of %.0f Gb/s",
		100*cur.gts/maxLink.gts, cur.gbps(), pcieLink{maxLink.gts, cur.width}.gbps())
	c.Fix = "move the card to a slot of its PCIe generation, or raise the slot's speed in the firmware setup; `lspci -vv` shows LnkSta (downgraded)"
	return c
}

func checkPCIeWidth(t *target) Check {
	c, cur, maxLink, ok := t.pcieCheck("pcie.width", "the device's maximum lane count")
	if !ok {
		return c
	}
	c.Expected = fmt.Sprintf("x%d (max_link_width)", maxLink.width)
	c.Found = fmt.Sprintf("x%d", cur.width)
	if cur.width >= maxLink.width {
		c.Status = OK
		return c
	}
	c.Status = Fail
	c.Cost = fmt.Sprintf("PCIe x%d of x%d: at most %.0f Gb/s instead of %.0f Gb/s",
		cur.width, maxLink.width, cur.gbps(), pcieLink{cur.gts, maxLink.width}.gbps())
	if t.port.RateGbps > cur.gbps() {
		c.Cost += fmt.Sprintf(", below the port's %s Gb/s", strconv.FormatFloat(t.port.RateGbps, 'f', -1, 64))
	}
	c.Fix = "move the card to a slot wired for all its lanes (check the board's manual and the firmware's bifurcation setting); reseat it"
	return c
}

// checkPCIeBandwidth: a PCIe link narrower than the port cannot feed it,
// whether it trained down or the platform is simply too old for the card.
func checkPCIeBandwidth(t *target) Check {
	c, cur, _, ok := t.pcieCheck("pcie.bandwidth", "more than the port's rate")
	if !ok {
		return c
	}
	c.Found = fmt.Sprintf("%s: %.0f Gb/s before TLP overhead", cur, cur.gbps())
	if t.port.RateGbps == 0 {
		c.Status = CannotTell
		c.Expected += " (the port shows no rate)"
		return c
	}
	rate := strconv.FormatFloat(t.port.RateGbps, 'f', -1, 64)
	c.Expected = fmt.Sprintf("more than port %d's %s Gb/s", t.port.Num, rate)
	if cur.gbps() > t.port.RateGbps {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = fmt.Sprintf("bandwidth tests top out below %.0f Gb/s of the port's %s Gb/s", cur.gbps(), rate)
	c.Fix = "see pcie.speed and pcie.width; if both are at their maximum, the card outruns its slot"
	return c
}

// checkMaxReadReq reads Max_Read_Request_Size from the PCI Express
// capability in the function's configuration space (the config file),
// which only root reads past its header. The NIC's reads of host memory
// (RDMA read responses, send data) go in requests of at most this size.
func checkMaxReadReq(t *target) Check {
	c := t.deviceCheck("pcie.max_read_request", "4096 bytes, as RDMA NICs are tuned")
	if t.pci == "" {
		c.Status, c.Found = NotApplicable, "no PCI link (a software device, or the kernel shows none)"
		return c
	}
	bdf := "BDF"
	if p, err := os.Readlink(t.pci); err == nil {
		bdf = filepath.Base(p)
	}
	lspci := fmt.Sprintf("`lspci -vvv -s %s | grep MaxReadReq`", bdf)
	config, err := os.ReadFile(filepath.Join(t.pci, "config"))
	if err != nil {
		c.Status, c.Found, c.Fix = CannotTell, "config: "+why(err), lspci
		return c
	}
	mrrs, err := maxReadRequest(config)
	if err != nil {
		c.Status, c.Found, c.Fix = CannotTell, err.Error(), "run as root, or "+lspci
		return c
	}
	c.Found = fmt.Sprintf("%d bytes", mrrs)
	if mrrs >= 4096 {
		c.Status = OK
		return c
	}
	c.Status = Warn
	c.Cost = fmt.Sprintf("the NIC fetches host memory in %d-byte requests: lower bandwidth for large sends and RDMA read responses", mrrs)
	c.Fix = fmt.Sprintf("raise it to 4096: setpci -s %s CAP_EXP+8.w, bits 14:12 = 5 (check %s first, and the vendor's tuning guide)", bdf, lspci)
	return c
}
