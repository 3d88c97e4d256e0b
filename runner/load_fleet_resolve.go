package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/dnstargets"
	"github.com/rdmarun/rdmarun/fleet"
)

// dnsTimeout bounds the lookup of hosts: {dns: NAME}, SRV hosts
// included: a resolver that does not answer must not hang a load. Tests
// shorten it.
var dnsTimeout = 10 * time.Second

// dnsResolver answers hosts: {dns: NAME}; tests replace it.
var dnsResolver dnstargets.Resolver = net.DefaultResolver

// slurmHosts expands hosts: slurm and {slurm: NODELIST}; tests replace
// it. fleet.SlurmHosts bounds scontrol itself.
var slurmHosts = fleet.SlurmHosts

// slurmNodelistEnv is what hosts: slurm expands: the job's allocation.
const slurmNodelistEnv = "SLURM_JOB_NODELIST"

// resolveFleet finds the hosts of a hostfile, DNS name or Slurm node list
// (an inline list has them already) and plans the fleet's pairs over
// them. dir is the scenario's directory, where a relative hostfile path
// starts.
func (l *loader) resolveFleet(dir string) {
	d := l.fleet
	if d == nil || d.bad || d.f.Source.Kind == HostsList || d.f.Source.Kind == "" {
		return
	}
	var hosts []fleet.Host
	var err error
	src := d.f.Source
	switch src.Kind {
	case HostsFile:
		hosts, err = readHostfile(dir, src.Value)
	case HostsDNS:
		hosts, err = lookupHosts(src.Value, d.dnsPort)
	case HostsSlurm:
		hosts, err = expandSlurm(src.Value)
	}
	if err != nil {
		l.errorf(d.hostsAt(), "hosts", "%v", err)
		return
	}
	l.planFleet(d, hosts)
}

func readHostfile(dir, path string) ([]fleet.Host, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the hostfile: %v; a relative path starts at the scenario's directory", err)
	}
	defer f.Close()
	return fleet.ParseHostfile(f, path)
}

// lookupHosts makes a host of each address of an A/AAAA name, or of each
// record of an SRV name, as the exporter follows the same names.
func lookupHosts(name string, port int) ([]fleet.Host, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dnsTimeout)
	defer cancel()
	targets, err := dnstargets.Lookup(ctx, dnsResolver, name, port)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("DNS name %s: no answer within %v; check the resolver, or list the hosts", name, dnsTimeout)
		}
		return nil, fmt.Errorf("DNS name %s did not resolve: %v; check the name, or list the hosts", name, err)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("DNS name %s names no hosts; check its records, or list the hosts", name)
	}
	hosts := make([]fleet.Host, len(targets))
	for i, tg := range targets {
		// An address, or an SRV record's HOST:PORT, shown without the
		// port serve listens on by default.
		h := tg.Host
		if host, p, err := net.SplitHostPort(h); err == nil && p == ctrl.DefaultPort {
			h = host
		}
		hosts[i] = fleet.Host{Name: h, Addr: tg.Addr}
	}
	return hosts, nil
}

// expandSlurm makes a host of each node of a Slurm node list, the job's
// own when nodelist is empty. Every node runs serve on the default port.
func expandSlurm(nodelist string) ([]fleet.Host, error) {
	if nodelist == "" {
		nodelist = os.Getenv(slurmNodelistEnv)
		if strings.TrimSpace(nodelist) == "" {
			return nil, fmt.Errorf("hosts: slurm takes the job's nodes from %s, which is not set; run inside a Slurm allocation, or write {slurm: NODELIST}", slurmNodelistEnv)
		}
	}
	names, err := slurmHosts(context.Background(), nodelist)
	if err != nil {
		return nil, err
	}
	hosts := make([]fleet.Host, len(names))
	for i, n := range names {
		h, err := fleet.ParseHost(n)
		if err != nil {
			return nil, fmt.Errorf("node %d of Slurm node list %q: %v", i+1, nodelist, err)
		}
		hosts[i] = h
	}
	return hosts, nil
}
