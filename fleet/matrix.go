package fleet

// Cell is one ordered host pair of a Matrix.
type Cell struct {
	Status Status `json:"status"`
	// Value is the worst measured value (of the pair's devices and
	// repeats); absent when no run measured one.
	Value float64 `json:"value,omitempty"`
	// Ratio is Value against the fleet median, oriented so that above 1
	// is worse.
	Ratio float64 `json:"ratio_to_median,omitempty"`
}

// Matrix is one metric over every host pair: Cells[a][b] is host a
// initiating against host b, nil where that pair did not run.
type Matrix struct {
	Metric         string    `json:"metric"`
	HigherIsBetter bool      `json:"higher_is_better"`
	Median         float64   `json:"median"`
	Hosts          []string  `json:"hosts"`
	Cells          [][]*Cell `json:"cells"`
}

// Matrices gives one Matrix per metric, sorted by metric. Where hosts
// met on several devices (rail), a cell shows the worst of them. Statuses
// follow Suspects' rules with the same lagFactor (0 means
// DefaultLagFactor).
func Matrices(hosts []Host, outcomes []Outcome, lagFactor float64) ([]Matrix, error) {
	j, err := judge(hosts, outcomes, lagFactor)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	out := make([]Matrix, 0, len(j.metrics))
	for _, metric := range j.metrics {
		m := Matrix{Metric: metric, HigherIsBetter: j.higher[metric], Median: j.medians[metric], Hosts: names,
			Cells: make([][]*Cell, len(hosts))}
		for a := range m.Cells {
			m.Cells[a] = make([]*Cell, len(hosts))
		}
		for _, v := range j.verdicts {
			if v.metric != metric {
				continue
			}
			c := m.Cells[v.pair.A.Host][v.pair.B.Host]
			if c == nil {
				c = &Cell{Status: StatusOK}
				m.Cells[v.pair.A.Host][v.pair.B.Host] = c
			}
			if v.status.severity() > c.Status.severity() {
				c.Status = v.status
			}
			if v.ratio > c.Ratio {
				c.Ratio, c.Value = v.ratio, v.value
			}
		}
		out = append(out, m)
	}
	return out, nil
}
