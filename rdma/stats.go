package rdma

// Summary holds the statistics of a set of latency samples, in
// nanoseconds. Count, minimum, maximum, mean and deviation are exact; the
// percentiles come from the latency histogram (see summaryOf).
type Summary struct {
	Count  int     `json:"count"`
	Min    float64 `json:"min_ns"`
	Max    float64 `json:"max_ns"`
	Mean   float64 `json:"mean_ns"`
	Stddev float64 `json:"stddev_ns"` // population standard deviation
	P50    float64 `json:"p50_ns"`
	P90    float64 `json:"p90_ns"`
	P99    float64 `json:"p99_ns"`
	P999   float64 `json:"p99_9_ns"`
	P9999  float64 `json:"p99_99_ns"`
}

// Half returns the summary with every value halved: the one-way latency
// (RTT/2) of a ping-pong, which is what perftest reports for send and
// write.
func (s Summary) Half() Summary {
	return Summary{
		Count: s.Count, Min: s.Min / 2, Max: s.Max / 2, Mean: s.Mean / 2, Stddev: s.Stddev / 2,
		P50: s.P50 / 2, P90: s.P90 / 2, P99: s.P99 / 2, P999: s.P999 / 2, P9999: s.P9999 / 2,
	}
}
