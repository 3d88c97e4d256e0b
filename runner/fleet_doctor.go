package runner

import (
	"context"
	"strings"
	"sync"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/runner/report"
)

// DoctorFunc asks the serve at cfg.Addr for its doctor's findings on
// device (all of its devices when empty); peer.Doctor is the real one.
type DoctorFunc func(ctx context.Context, cfg peer.ClientConfig, device string, port int) (*peer.FarReport, error)

// maxDoctorEnds bounds the hosts a fleet run asks for findings: the top
// suspects explain the run, and a fleet whose every host is suspect has
// a problem the first few already show, without hundreds of requests.
const maxDoctorEnds = 8

// doctorEnd is one host (and device, in rail mode) a suspect names.
type doctorEnd struct {
	host   fleet.Host
	device string
}

// suspectEnds lists the hosts the suspects name, worst suspect first,
// each once: a host suspect by its name, a NIC as host/device, a link
// by its two ends.
func suspectEnds(hosts []fleet.Host, suspects []fleet.Suspect) []doctorEnd {
	byName := map[string]fleet.Host{}
	for _, h := range hosts {
		byName[h.Name] = h
	}
	var out []doctorEnd
	seen := map[string]bool{} // host/device
	add := func(name string) {
		h, ok := byName[name]
		dev := ""
		if !ok {
			// host/device: host names never hold a slash.
			hostName, d, found := strings.Cut(name, "/")
			if h, ok = byName[hostName]; !ok || !found {
				return
			}
			dev = d
		}
		if key := h.Name + "/" + dev; !seen[key] && len(out) < maxDoctorEnds {
			seen[key] = true
			out = append(out, doctorEnd{host: h, device: dev})
		}
	}
	for _, s := range suspects {
		for _, name := range strings.Split(s.Name, " <-> ") {
			add(name)
		}
	}
	return out
}

// diagnoseFleet attaches the doctor's findings on the suspects' hosts,
// asked at once, each bounded by the peer package's step deadlines. A
// host that cannot be asked gets an end saying why.
func diagnoseFleet(ctx context.Context, rep *report.Report, hosts []fleet.Host, suspects []fleet.Suspect, a peer.ClientConfig, ask DoctorFunc) {
	if len(suspects) == 0 || ctx.Err() != nil {
		return
	}
	ends := suspectEnds(hosts, suspects)
	out := make([]report.DoctorEnd, len(ends))
	var wg sync.WaitGroup
	for i, e := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := a
			cfg.Addr = e.host.Addr
			if cfg.Addr == "" {
				cfg.Addr = e.host.Name
			}
			far, err := ask(ctx, cfg, e.device, 0)
			if err != nil {
				out[i] = report.DoctorEndError(e.host.Name, err)
				return
			}
			out[i] = report.NewDoctorEnd(e.host.Name, far.Report)
		}()
	}
	wg.Wait()
	rep.Doctor = out
}
