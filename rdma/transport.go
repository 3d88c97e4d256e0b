package rdma

import (
	"errors"
	"fmt"

	"github.com/rdmarun/rdmarun/sysfs"
)

// Transport is the RDMA transport a device speaks, which decides how its
// QPs connect and which ops it can run.
type Transport string

// The transports.
const (
	TransportIB    Transport = "InfiniBand"
	TransportRoCE  Transport = "RoCE"
	TransportIWARP Transport = "iWARP"
)

// checkCapable says why a device of transport t (atomics: whether its
// attributes offer atomic operations) cannot run spec, naming the
// transport or the attribute; nil when it can. iWARP's limits follow from
// the protocol, not from a list of devices: its QPs connect only through
// the CM's TCP handshake, it has reliable connected QPs only, and RDMAP
// carries no immediate data.
func checkCapable(device string, t Transport, atomics bool, spec Test) error {
	if t == TransportIWARP {
		switch {
		case spec.Connect != ConnectCM:
			return fmt.Errorf("rdma: %s is an iWARP device, whose QPs connect only through the CM (a TCP connection carries them); set connect: rdma_cm", device)
		case spec.QPType != RC:
			return fmt.Errorf("rdma: %s is an iWARP device, which has reliable connected (rc) QPs only, not %s", device, spec.QPType)
		case spec.Op == OpSendImm || spec.Op == OpWriteImm:
			return fmt.Errorf("rdma: %s is an iWARP device: RDMAP carries no immediate data, so op %s cannot run; use %s", device, spec.Op, withoutImm(spec.Op))
		}
	}
	if spec.Op.Atomic() && !atomics {
		return fmt.Errorf("rdma: %s reports atomic_cap ATOMIC_NONE (ibv_devinfo -v): it runs no atomic operations, so op %s cannot run", device, spec.Op)
	}
	return nil
}

func withoutImm(op Op) Op {
	if op == OpWriteImm {
		return OpWrite
	}
	return OpSend
}

// ErrIWARPExchange is what Connect returns on an iWARP device.
var ErrIWARPExchange = errors.New("rdma: an iWARP device's QPs connect only through the CM; set connect: rdma_cm")

// TransportOf tells a device's transport from sysfs: node type 4 is an
// RNIC (iWARP); otherwise an Ethernet port is RoCE.
func TransportOf(d Device) Transport {
	switch {
	case sysfs.IWARP(d.NodeType):
		return TransportIWARP
	case len(d.Ports) > 0 && d.Ports[0].LinkLayer == "Ethernet":
		return TransportRoCE
	}
	return TransportIB
}

// TransportNote says what follows from a transport for someone choosing
// tests: "" when nothing is out of the ordinary.
func TransportNote(t Transport) string {
	if t == TransportIWARP {
		return "iWARP: RC QPs only, connected only through the CM (connect: rdma_cm, over TCP); no immediate data (send_imm, write_imm); an RDMA Read's local sink needs remote write access (rdmarun registers it so)"
	}
	return ""
}
