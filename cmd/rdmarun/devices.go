package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/rdmarun/rdmarun/rdma"
)

const noDeviceHelp = `no RDMA device found.
Check, in this order:
  - a driver is loaded: lsmod | grep -E 'mlx5_ib|irdma|bnxt_re|rdma_rxe'
  - rdma-core and its providers are installed (Debian: rdma-core ibverbs-providers), and ibv_devices lists the device
  - the link is up: rdma link show
No RDMA hardware? 'make demo' runs rdmarun on soft-RoCE (rdma_rxe) inside a QEMU VM.`

// noDeviceError explains, over several lines, how to find out why no
// device shows.
type noDeviceError struct{}

func (noDeviceError) Error() string { return noDeviceHelp }
func (noDeviceError) Unwrap() error { return rdma.ErrNoDevice }

func environmentError(err error) error {
	switch {
	case errors.Is(err, rdma.ErrNotSupported):
		return &exitError{exitEnvironment, err}
	case errors.Is(err, rdma.ErrNoDevice):
		return &exitError{exitEnvironment, noDeviceError{}}
	}
	return &exitError{exitEnvironment, err}
}

// listDevices is rdma.Devices; tests replace it to stand in for hosts
// they are not running on.
var listDevices = rdma.Devices

func runDevices(w io.Writer, asJSON bool) error {
	devs, err := listDevices()
	if err != nil {
		return environmentError(err)
	}
	if len(devs) == 0 {
		return environmentError(rdma.ErrNoDevice)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Devices []rdma.Device `json:"devices"`
		}{devs})
	}
	return printDevices(w, devs)
}

func printDevices(w io.Writer, devs []rdma.Device) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tDRIVER\tTRANSPORT\tPORT\tSTATE\tPHYS\tLINK\tMTU\tRATE\tLID\tNODE GUID")
	for _, d := range devs {
		for _, p := range d.Ports {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n",
				d.Name, orDash(d.Driver), d.Transport, p.Num, p.State, p.PhysState, p.LinkLayer,
				mtuText(p.ActiveMTU), rateText(p.RateGbps), p.LID, d.NodeGUID)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range devs {
		if note := rdma.TransportNote(d.Transport); note != "" {
			fmt.Fprintf(w, "%s: %s\n", d.Name, note)
		}
	}
	for _, d := range devs {
		for _, p := range d.Ports {
			fmt.Fprintf(w, "\n%s port %d GIDs:\n", d.Name, p.Num)
			auto, autoErr := p.SelectGID(rdma.AutoGIDIndex)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  INDEX\tTYPE\tNETDEV\tGID\t")
			for _, g := range p.GIDs {
				mark := ""
				if autoErr == nil && g.Index == auto.Index {
					mark = "<- auto"
				}
				fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", g.Index, g.Type, orDash(g.Netdev), g.GID, mark)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if autoErr != nil {
				fmt.Fprintf(w, "  (no GID to choose: %v)\n", autoErr)
			}
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func mtuText(b int) string {
	if b == 0 {
		return "-"
	}
	return strconv.Itoa(b)
}

func rateText(gbps float64) string {
	if gbps == 0 {
		return "-"
	}
	return strconv.FormatFloat(gbps, 'f', -1, 64) + " Gb/s"
}
