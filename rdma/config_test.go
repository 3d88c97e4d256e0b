package rdma

import "testing"

func TestEndpointConfigValidate(t *testing.T) {
	ok := EndpointConfig{Device: "rxe0", GIDIndex: AutoGIDIndex, MaxMessage: 4096}
	for _, tc := range []struct {
		mod  func(*EndpointConfig)
		want string
	}{
		{func(c *EndpointConfig) {}, ""},
		{func(c *EndpointConfig) { c.Device = "" }, "endpoint: device is empty; name one (see `rdmarun devices`)"},
		{func(c *EndpointConfig) { c.Port = 300 }, "endpoint: port 300 out of range 1..255"},
		{func(c *EndpointConfig) { c.GIDIndex = -2 }, "endpoint: gid index -2 is negative; use an index from `rdmarun devices` or auto"},
		{func(c *EndpointConfig) { c.MaxMessage = 0 }, "endpoint: max message 0 bytes out of range 1..1 GiB"},
		{func(c *EndpointConfig) { c.SQDepth = 1 << 16 }, "endpoint: send queue depth 65536 out of range 1..32768"},
	} {
		c := ok
		tc.mod(&c)
		err := c.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestQPAttrs(t *testing.T) {
	if err := (QPAttrs{}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (QPAttrs{MTU: 1500}).Validate(); err == nil || err.Error() != "qp: MTU 1500 is not one of 256, 512, 1024, 2048, 4096" {
		t.Errorf("got %v", err)
	}
	if err := (QPAttrs{RetryCnt: 8}).Validate(); err == nil || err.Error() != "qp: retry_cnt 8 out of range 0..7" {
		t.Errorf("got %v", err)
	}
	m := QPAttrs{RetryCnt: 3, MTU: 4096, SL: 2}.merged()
	want := DefaultQPAttrs()
	want.RetryCnt, want.MTU, want.SL = 3, 4096, 2
	if m != want {
		t.Errorf("merged = %+v, want %+v", m, want)
	}
}

func TestLatencyOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    LatencyOptions
		want string
	}{
		{LatencyOptions{Size: 2, Iterations: 1}, ""},
		{LatencyOptions{Size: 0, Iterations: 1}, "latency: size 0 bytes must be at least 1"},
		{LatencyOptions{Size: 8192, Iterations: 1}, "latency: size 8192 bytes exceeds the endpoint's buffer of 4096 bytes"},
		{LatencyOptions{Size: 2}, "latency: iterations 0 must be at least 1"},
		{LatencyOptions{Size: 2, Iterations: 1, Warmup: -1}, "latency: warm-up -1 must not be negative"},
	} {
		err := tc.o.Validate(4096)
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
}
