package prober

import "github.com/rdmarun/rdmarun/rdma"

// complete is the engine's form of a spec the tests know to be valid.
func complete(s rdma.TestSpec) rdma.Test {
	t, err := s.Complete()
	if err != nil {
		panic(err)
	}
	return t
}
