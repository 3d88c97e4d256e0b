package fleet

import (
	"cmp"
	"fmt"
	"slices"
)

// Suspect kinds.
const (
	SuspectHost = "host"
	SuspectNIC  = "nic"  // rail mode: one device of a host
	SuspectLink = "link" // the path between two NICs
)

// The blame rules' thresholds.
const (
	// A NIC is blamed when strictly more than this share of its partners
	// (the NICs it was tested with) are bad: the issue's "fails or lags
	// with most partners". A bad path hurts one partner; a bad NIC hurts
	// all of them, so a majority separates the two with room for one
	// unrelated bad path.
	blameShare = 0.5
	// With fewer partners than this, a bad pair says nothing about which
	// end is at fault, so it is named as a link with that caveat.
	minPartnersToBlame = 2
)

// Suspect is a host, NIC or link the outcomes point at.
type Suspect struct {
	Kind string `json:"kind"` // SuspectHost, SuspectNIC or SuspectLink
	// Name is the host, "host/device" for a NIC, "a <-> b" for a link.
	Name string `json:"name"`
	// Score is the number of bad NIC pairs (per metric) the suspect
	// explains; suspects are ranked by it.
	Score float64 `json:"score"`
	// Evidence lists the bad pairs, each against the fleet median.
	Evidence []string `json:"evidence"`
}

// Suspects ranks what the outcomes blame, worst first (see Matrices for
// lagFactor). A pair is bad when it failed, its host did not answer, or it
// lagged; repeats of a pair are confirmation runs, bad only if all are.
// Pairs are then taken per unordered NIC pair (a path), bad if any
// direction or metric is:
//
//  1. NICs: the NIC bad with the largest share of its partners is blamed
//     if that share is above blameShare and it has minPartnersToBlame
//     partners; its pairs are then set aside (they are explained) and
//     the rest recounted, until no NIC qualifies. Recounting is what
//     keeps two dead hosts among four from blaming the healthy two.
//  2. Hosts: without rail (one device per host) a blamed NIC is its host.
//     In rail mode a host with more than half its NICs blamed is the
//     suspect (a host or its software, not one port), otherwise each
//     blamed NIC is.
//  3. Links: a bad path neither of whose NICs is blamed is a link
//     suspect; its hosts are not blamed.
//
// Two bad paths that share a host therefore blame the host when they are
// most of its partners (N <= 4 hosts: with so few partners the shared end
// is the likelier cause and cannot be told from two bad paths), and name
// two links otherwise.
func Suspects(hosts []Host, outcomes []Outcome, lagFactor float64) ([]Suspect, error) {
	j, err := judge(hosts, outcomes, lagFactor)
	if err != nil {
		return nil, err
	}
	rail := railMode(j.verdicts)
	name := func(n NIC) string { return nicName(hosts, n, rail) }

	paths := map[link]*path{}
	var order []link
	for _, v := range j.verdicts {
		k := unordered(v.pair)
		p := paths[k]
		if p == nil {
			p = &path{link: k}
			paths[k] = p
			order = append(order, k)
		}
		if v.status != StatusOK {
			p.bad++
			p.evidence = append(p.evidence, describe(hosts, rail, v, j.medians[v.metric], j.higher[v.metric]))
		}
	}

	type blame struct {
		paths         []*path // the bad paths it explains
		bad, partners int
	}
	blamed := map[NIC]blame{}
	for {
		var pick NIC
		var pickBad, pickPartners int
		for _, n := range nicsOf(order) {
			if _, done := blamed[n]; done {
				continue
			}
			bad, partners := 0, 0
			for _, k := range order {
				other, ok := k.other(n)
				if _, gone := blamed[other]; !ok || gone {
					continue
				}
				partners++
				if paths[k].bad > 0 {
					bad++
				}
			}
			if partners < minPartnersToBlame || float64(bad) <= blameShare*float64(partners) {
				continue
			}
			// Highest share wins; ties go to more bad pairs, then the
			// NIC seen first, so the result does not depend on map order.
			if pickPartners == 0 || bad*pickPartners > pickBad*partners ||
				bad*pickPartners == pickBad*partners && bad > pickBad {
				pick, pickBad, pickPartners = n, bad, partners
			}
		}
		if pickPartners == 0 {
			break
		}
		var explained []*path
		for _, k := range order {
			other, ok := k.other(pick)
			if _, gone := blamed[other]; ok && !gone && paths[k].bad > 0 {
				explained = append(explained, paths[k])
			}
		}
		blamed[pick] = blame{explained, pickBad, pickPartners}
	}

	var out []Suspect
	byHost := map[int][]NIC{}
	nicsPerHost := map[int]int{}
	for _, n := range nicsOf(order) {
		nicsPerHost[n.Host]++
		if _, ok := blamed[n]; ok {
			byHost[n.Host] = append(byHost[n.Host], n)
		}
	}
	for h, nics := range byHost {
		if !rail || 2*len(nics) > nicsPerHost[h] {
			s := Suspect{Kind: SuspectHost, Name: hosts[h].Name}
			for _, n := range nics {
				s.Evidence = append(s.Evidence, fmt.Sprintf("%s is bad with %d of %d partners", name(n), blamed[n].bad, blamed[n].partners))
			}
			for _, n := range nics {
				s.add(blamed[n].paths)
			}
			out = append(out, s)
			continue
		}
		for _, n := range nics {
			s := Suspect{Kind: SuspectNIC, Name: name(n)}
			s.Evidence = append(s.Evidence, fmt.Sprintf("%s is bad with %d of %d partners", name(n), blamed[n].bad, blamed[n].partners))
			s.add(blamed[n].paths)
			out = append(out, s)
		}
	}
	for _, k := range order {
		p := paths[k]
		_, aBlamed := blamed[k.lo]
		_, bBlamed := blamed[k.hi]
		if p.bad == 0 || aBlamed || bBlamed {
			continue
		}
		s := Suspect{Kind: SuspectLink, Name: name(k.lo) + " <-> " + name(k.hi)}
		s.add([]*path{p})
		for _, n := range []NIC{k.lo, k.hi} {
			if partnersOf(order, n) < minPartnersToBlame {
				s.Evidence = append(s.Evidence, fmt.Sprintf("%s was tested with no one else, so it cannot be told apart from this path", name(n)))
			}
		}
		out = append(out, s)
	}
	kindRank := map[string]int{SuspectHost: 0, SuspectNIC: 1, SuspectLink: 2}
	slices.SortStableFunc(out, func(a, b Suspect) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(kindRank[a.Kind], kindRank[b.Kind]), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// path is the tests between two NICs, both directions and all metrics.
type path struct {
	link     link
	bad      int // bad (pair, metric) verdicts
	evidence []string
}

func (s *Suspect) add(paths []*path) {
	for _, p := range paths {
		s.Score += float64(p.bad)
		s.Evidence = append(s.Evidence, p.evidence...)
	}
}

func unordered(p Pair) link {
	a, b := p.A, p.B
	if cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Device, b.Device)) > 0 {
		a, b = b, a
	}
	return link{a, b}
}

func (k link) other(n NIC) (NIC, bool) {
	switch n {
	case k.lo:
		return k.hi, true
	case k.hi:
		return k.lo, true
	}
	return NIC{}, false
}

// nicsOf lists the NICs of the links, in order of first appearance.
func nicsOf(links []link) []NIC {
	seen := map[NIC]bool{}
	var nics []NIC
	for _, k := range links {
		for _, n := range []NIC{k.lo, k.hi} {
			if !seen[n] {
				seen[n] = true
				nics = append(nics, n)
			}
		}
	}
	return nics
}

func partnersOf(links []link, n NIC) int {
	count := 0
	for _, k := range links {
		if _, ok := k.other(n); ok {
			count++
		}
	}
	return count
}

// railMode reports whether any host was tested on more than one device:
// only then are NICs told apart from hosts.
func railMode(verdicts []verdict) bool {
	devs := map[int]string{}
	for _, v := range verdicts {
		for _, n := range []NIC{v.pair.A, v.pair.B} {
			if d, ok := devs[n.Host]; ok && d != n.Device {
				return true
			}
			devs[n.Host] = n.Device
		}
	}
	return false
}

// describe says what one bad verdict shows, in the units people read: a
// metric where higher is better is a bandwidth in bytes/s, shown in Gb/s
// (10^9 bit/s); any other is a latency in seconds, shown in microseconds.
func describe(hosts []Host, rail bool, v verdict, median float64, higherIsBetter bool) string {
	pair := nicName(hosts, v.pair.A, rail) + " -> " + nicName(hosts, v.pair.B, rail)
	runs := ""
	if v.runs > 1 {
		runs = fmt.Sprintf(" in all %d runs", v.runs)
	}
	switch v.status {
	case StatusEnv:
		return fmt.Sprintf("%s %s: a host did not answer%s", pair, v.metric, runs)
	case StatusFail:
		return fmt.Sprintf("%s %s: failed%s", pair, v.metric, runs)
	}
	if higherIsBetter {
		return fmt.Sprintf("%s %s: %.3f Gb/s, %.1fx worse than the fleet median %.3f Gb/s%s", pair, v.metric, v.value*8/1e9, v.ratio, median*8/1e9, runs)
	}
	return fmt.Sprintf("%s %s: %.1f us, %.1fx worse than the fleet median %.1f us%s", pair, v.metric, v.value*1e6, v.ratio, median*1e6, runs)
}
