package main

import (
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/peer"
	"github.com/rdmarun/rdmarun/rdma"
)

// responderKeys are the keys the responder's errors, logs and refusals
// name: what an operator of the exporter can change.
var responderKeys = peer.ResponderKeys{
	LimitKeys: peer.LimitKeys{
		Concurrent: "responder.max_concurrent", Memory: "responder.max_memory",
		QPs: "responder.max_qps", Test: "responder.max_test",
		Device: "responder.device", Unauthenticated: "responder.allow_unauthenticated", Relay: "responder.relay",
	},
	TokenFile: "responder.token_file", RelayCA: "responder.tls.relay_ca_file", NoCM: "responder.cm_port: -1",
}

// responderSettings is the responder section as peer.NewResponder
// assembles it, as serve's flags would give it. device answers when
// responder.device is not set (the exporter's --device); with neither,
// the responder picks the first ACTIVE device as it starts.
func responderSettings(r config.Responder, device string) peer.ResponderConfig {
	if r.Device != "" {
		device = r.Device
	}
	sessions := r.MaxSessions
	if sessions == 0 {
		sessions = -1 // none, where the library's 0 is its default
	}
	return peer.ResponderConfig{
		Listen: r.Listen, Device: device, Port: r.DevicePort, GIDIndex: rdma.AutoGIDIndex,
		TokenFile: r.TokenFile, AllowUnauthenticated: r.AllowUnauthenticated,
		TLS: r.TLS.Ctrl(), RelayCA: r.TLS.RelayCAFile, NoRelay: !r.Relay, CMPort: r.CMPort,
		MaxTest: r.MaxTest, MaxConcurrent: r.MaxConcurrent, MaxSessions: sessions, MaxIdle: r.SessionIdle,
		MaxMemory: r.MaxMemoryBytes(), MaxQPs: r.MaxQPs,
		Keys: responderKeys,
	}
}
