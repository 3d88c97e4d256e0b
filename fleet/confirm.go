package fleet

// BadPairs lists the pairs whose verdict is not OK on some metric, by
// Suspects' rules with the same lagFactor, each once, in order of first
// outcome: the pairs a confirmation round re-runs. A pair whose repeat
// passed is no longer bad (a flaky sample), so re-running it again could
// not change the verdict.
func BadPairs(hosts []Host, outcomes []Outcome, lagFactor float64) ([]Pair, error) {
	j, err := judge(hosts, outcomes, lagFactor)
	if err != nil {
		return nil, err
	}
	seen := map[Pair]bool{}
	var bad []Pair
	for _, v := range j.verdicts {
		if v.status != StatusOK && !seen[v.pair] {
			seen[v.pair] = true
			bad = append(bad, v.pair)
		}
	}
	return bad, nil
}
