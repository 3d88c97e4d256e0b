package portstats

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Deltas is how far each counter moved between two snapshots of one port.
//
// Units are the kernel's, unconverted. In particular counters/port_xmit_data
// and counters/port_rcv_data count 4-byte words, not bytes, as the
// InfiniBand PMA defines them (mlx5 reports them this way whether the device
// backs them with the legacy 32-bit or the extended 64-bit counters); use
// Bytes to convert. Legacy 32-bit PMA counters saturate at 2^32-1 rather
// than wrap, so a delta ending there is only a lower bound.
type Deltas struct {
	Counters   map[string]uint64 `json:"counters,omitempty"`
	HWCounters map[string]uint64 `json:"hw_counters,omitempty"`
	// Ethtool holds the netdev's pause statistics (see Counters.Ethtool).
	Ethtool map[string]uint64 `json:"ethtool,omitempty"`
	// Categories groups the deltas by what they mean, through the
	// drivers' name maps; nil when no snapshot was taken.
	Categories *Categories `json:"categories,omitempty"`
	// Reset lists, as "counters/NAME" or "hw_counters/NAME", the counters
	// that went backwards: they wrapped or were cleared (driver reload,
	// port reset, an admin zeroing them). Their delta is the after value,
	// which undercounts whatever happened before the reset.
	Reset []string `json:"reset,omitempty"`
}

// Delta returns after minus before for every counter present in both.
// Counters read only once (skipped in the other snapshot, or appearing with
// a driver reload) have no meaningful delta and are left out.
//
// hw_counters/lifespan is left out too: it is not a count of events but the
// setting, in milliseconds, for how long the kernel caches hw_counters
// values. A change in it means someone reconfigured the port, and putting
// it among the deltas would read as that many events.
func Delta(before, after Counters) Deltas {
	var d Deltas
	d.Counters = diff("counters/", before.Counters, after.Counters, &d.Reset)
	d.HWCounters = diff("hw_counters/", before.HWCounters, after.HWCounters, &d.Reset)
	d.Ethtool = diff("ethtool/", before.Ethtool, after.Ethtool, &d.Reset)
	slices.Sort(d.Reset)
	if !after.Time.IsZero() {
		// The maps that name the categories are the after snapshot's: a
		// counter a reload added has no delta, so it is unreported.
		ethErr := cmp.Or(after.EthtoolError, before.EthtoolError)
		d.Categories = Categorize(Source{
			Driver: after.Driver, Netdev: after.Netdev, NetdevDriver: after.NetdevDriver,
			HWCounters: d.HWCounters, Ethtool: d.Ethtool, EthtoolError: ethErr,
		})
	}
	return d
}

func diff(prefix string, before, after map[string]uint64, reset *[]string) map[string]uint64 {
	var out map[string]uint64
	for name, a := range after {
		if prefix == "hw_counters/" && name == "lifespan" {
			continue
		}
		b, ok := before[name]
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]uint64{}
		}
		if a < b {
			out[name] = a
			*reset = append(*reset, prefix+name)
			continue
		}
		out[name] = a - b
	}
	return out
}

// NonZero returns only the counters that moved. Reset is kept whole: a
// counter cleared during the case is worth reporting even if it then stayed
// at zero, since its true movement is unknown. The categories are kept
// whole too, zeros included: a category at zero is a measurement, while
// one the driver lacks is listed as unreported. Only the priorities on
// which no pause moved are dropped.
func (d Deltas) NonZero() Deltas {
	return Deltas{
		Counters:   nonZero(d.Counters),
		HWCounters: nonZero(d.HWCounters),
		Ethtool:    nonZero(d.Ethtool),
		Categories: d.Categories.movedPriorities(),
		Reset:      slices.Clone(d.Reset),
	}
}

func nonZero(m map[string]uint64) map[string]uint64 {
	var out map[string]uint64
	for k, v := range m {
		if v == 0 {
			continue
		}
		if out == nil {
			out = map[string]uint64{}
		}
		out[k] = v
	}
	return out
}

// Names returns "counters/NAME" and "hw_counters/NAME" for every delta,
// sorted. The prefix is needed because both directories may hold the same
// name: mlx5 has link_downed in counters/ and rxe in hw_counters/.
func (d Deltas) Names() []string {
	names := make([]string, 0, len(d.Counters)+len(d.HWCounters))
	for k := range d.Counters {
		names = append(names, "counters/"+k)
	}
	for k := range d.HWCounters {
		names = append(names, "hw_counters/"+k)
	}
	slices.Sort(names)
	return names
}

// Bytes converts a value of counters/port_xmit_data or counters/port_rcv_data
// (named bare or with the "counters/" prefix) from 4-byte words to bytes.
// ok is false for any other counter, whose unit is not words, and if the
// byte count would overflow uint64.
func Bytes(name string, v uint64) (bytes uint64, ok bool) {
	switch strings.TrimPrefix(name, "counters/") {
	case "port_xmit_data", "port_rcv_data":
	default:
		return 0, false
	}
	if v > math.MaxUint64/4 {
		return 0, false
	}
	return v * 4, true
}
