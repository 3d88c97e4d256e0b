package fleet_test

import (
	"testing"

	"github.com/rdmarun/rdmarun/fleet"
	"github.com/rdmarun/rdmarun/peer"
)

func TestDefaultPortIsPeers(t *testing.T) {
	if fleet.DefaultPort != peer.DefaultPort {
		t.Errorf("fleet.DefaultPort %s != peer.DefaultPort %s", fleet.DefaultPort, peer.DefaultPort)
	}
}
