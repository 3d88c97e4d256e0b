package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
)

// DevicesFunc asks a host's responder for its devices; peer.Devices is
// the real one, tests give their own.
type DevicesFunc func(ctx context.Context, cfg peer.ClientConfig) (*peer.FarDevices, error)

// ResolveDevices makes a devices: auto fleet whole: every host that
// lists no devices of its own gets those its responder reports ACTIVE on
// the port it tests on, in natural order (mlx5_2 before mlx5_10, so
// that rail i is the same NIC position on every host whatever the
// listing's order), and then the fleet's pairs and rounds are planned,
// as Load plans a fleet whose devices are written. The hosts are asked
// at once, a bounded number at a time, with relay's token and TLS.
//
// It fails naming every host that could not be asked or has no ACTIVE
// device (with each device's state), or when the devices found cannot
// be planned (rail over hosts with unequal counts). A fleet without
// AutoDevices, or whose hosts all list their devices, is left as it is.
func ResolveDevices(ctx context.Context, sc *Scenario, relay Relay) error {
	fl := sc.Fleet
	if fl == nil || !fl.AutoDevices || len(fl.Rounds) > 0 {
		return nil
	}
	ask := relay.Devices
	if ask == nil {
		ask = peer.Devices
	}
	cfg := peer.ClientConfig{Token: relay.Token, TLS: relay.TLS, StepTimeout: relay.StepTimeout}
	hosts := slices.Clone(fl.Hosts)
	errs := make([]error, len(hosts))
	sem := make(chan struct{}, waitParallel)
	var wg sync.WaitGroup
	for i := range hosts {
		if len(hosts[i].Devices) > 0 {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c := cfg
			c.Addr = hosts[i].DialAddr()
			hosts[i].Devices, errs[i] = activeDevices(ctx, ask, c)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", hosts[i].Name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("devices: auto: %w", err)
	}
	if n := pairCount(fl.Pattern, hosts, fl.Options); n > maxFleetPairs {
		return fmt.Errorf("devices: auto: pattern %s over the %d hosts' devices yields %d pairs, more than %d; split the fleet, or list fewer devices", fl.Pattern, len(hosts), n, maxFleetPairs)
	}
	pairs, err := fl.Pattern.Pairs(hosts, fl.Options)
	if err != nil {
		return fmt.Errorf("devices: auto: the devices the hosts report ACTIVE: %w (%s)", err, describeDevices(hosts))
	}
	rounds, err := fl.Pattern.Rounds(pairs, fl.Parallel)
	if err != nil {
		return fmt.Errorf("devices: auto: %w", err)
	}
	fl.Hosts, fl.Pairs, fl.Rounds = hosts, pairs, rounds
	if msg := checkOpenFiles(fl, fl.Parallel > 0); msg != "" {
		return errors.New("devices: auto: " + msg)
	}
	return nil
}

// activeDevices asks one responder and keeps its ACTIVE devices.
func activeDevices(ctx context.Context, ask DevicesFunc, cfg peer.ClientConfig) ([]string, error) {
	far, err := ask(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var active, others []string
	for _, d := range far.Devices {
		if d.Active() {
			active = append(active, d.Name)
			continue
		}
		state := d.State
		if state == "" {
			state = fmt.Sprintf("no port %d", far.Port)
		}
		others = append(others, d.Name+" "+state)
	}
	if len(active) == 0 {
		if len(others) == 0 {
			return nil, errors.New("its responder reports no RDMA device")
		}
		return nil, fmt.Errorf("no device has port %d ACTIVE (%s); bring a link up, or list the host's devices", far.Port, strings.Join(others, ", "))
	}
	slices.SortFunc(active, naturalCompare)
	return active, nil
}

// describeDevices says which devices each host has, for an error about
// the plan made of them.
func describeDevices(hosts []fleet.Host) string {
	parts := make([]string, 0, len(hosts))
	for _, h := range hosts {
		parts = append(parts, h.Name+": "+strings.Join(h.Devices, ", "))
	}
	return strings.Join(parts, "; ")
}

// naturalCompare orders names with their digit runs as numbers:
// mlx5_2 before mlx5_10, as a host numbers its NICs. Runs of any length
// compare without parsing: more significant digits is larger.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da == 0 || db == 0 {
			if c := cmp.Compare(a[0], b[0]); c != 0 {
				return c
			}
			a, b = a[1:], b[1:]
			continue
		}
		ta, tb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
		if c := cmp.Compare(len(ta), len(tb)); c != 0 {
			return c
		}
		if c := strings.Compare(ta, tb); c != 0 {
			return c
		}
		// The same number: fewer leading zeros first, so that only
		// equal names compare equal.
		if c := cmp.Compare(da, db); c != 0 {
			return c
		}
		a, b = a[da:], b[db:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of the digits s starts with.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
