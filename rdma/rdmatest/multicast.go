package rdmatest

import (
	"testing"

	"github.com/rdmarun/rdmarun/rdma"
)

// CheckMulticast checks a multicast result: sent messages went out to
// receivers, in that order (devices), each receiver accounts for every
// one of them, the receiver on device cut received none and every other
// one received some; and the direction's delivery is the worst one's.
func CheckMulticast(t testing.TB, res *rdma.Result, sent uint64, devices []string, cut string) {
	t.Helper()
	dir := res.Bandwidth.Directions[0]
	t.Logf("sent %d at %.4f Gb/s", dir.Messages, dir.Gbps())
	if dir.Messages != sent || len(res.Receivers) != len(devices) {
		t.Fatalf("sent %d to %d receivers; want %d to %d", dir.Messages, len(res.Receivers), sent, len(devices))
	}
	var worst uint64
	for i, r := range res.Receivers {
		d := r.Delivery
		t.Logf("%s %s: received %d, lost %d (%.1f%%), %.4f Gb/s", r.Host, r.Device, d.Received, d.Lost, 100*d.LossRatio, d.ReceivedGbps())
		worst = max(worst, d.Lost)
		switch {
		case r.Device != devices[i] || d.Sent != sent || d.Received+d.Lost != sent:
			t.Errorf("receiver %d: %+v, want %s accounting for the %d sent", i, r, devices[i], sent)
		case r.Device == cut && d.Received != 0:
			t.Errorf("%s received %d over a path that drops everything", r.Device, d.Received)
		case r.Device != cut && d.Received == 0:
			t.Errorf("%s received nothing from the group", r.Device)
		}
	}
	if dir.Delivery == nil || dir.Delivery.Lost != worst {
		t.Errorf("the direction's delivery %+v, want the worst receiver's (%d lost)", dir.Delivery, worst)
	}
}
