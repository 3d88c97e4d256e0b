package main

import (
	"io"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/runner"
	"github.com/rdmarun/rdmarun/runner/report"
)

// benchCmd runs one test, given by flags, as a scenario of one case: the
// flags are the case's keys and the knobs of runner, so bench and a
// scenario file are checked, run, judged and reported by one path.
type benchCmd struct {
	where
	outputs
	settings []runner.Setting // in the order given
}

func newBenchCmd(app *kingpin.Application) *benchCmd {
	c := &benchCmd{outputs: outputs{text: report.TextOptions.Compact}}
	cmd := app.Command("bench", "Run one test: against a responder (rdmarun serve) with --peer, or between two endpoints in this process (two devices, or one device to itself).").Alias("loopback")
	cmd.Flag("peer", "loopback, or HOST[:PORT] of rdmarun serve.").Default("loopback").StringVar(&c.peer)
	c.addTLSFlags(cmd)
	cmd.Flag("tls-server-name", "Name to verify in the responder's certificate (default: the host of --peer).").StringVar(&c.tls.ServerName)
	cmd.Flag("device", "Requester device (default: the first ACTIVE device).").StringVar(&c.device)
	cmd.Flag("peer-device", "Responder device (loopback default: the requester's; remote default: the responder's own).").StringVar(&c.peerDevice)
	cmd.Flag("port", "Port number on both devices.").Default("1").IntVar(&c.port)
	cmd.Flag("gid-index", "GID index on both devices, or auto (IPv4 RoCE v2 first).").Default("auto").StringVar(&c.gidIndex)

	c.setting(cmd, "op", "Operation: send, send_imm, write, write_imm, read, fetch_add, cmp_swap.").Default("write")
	c.setting(cmd, "measure", "latency, bandwidth, or both.").Default("latency")
	c.setting(cmd, "mode", "busy_poll, event (completion channel), or both.").Default("busy_poll")
	c.setting(cmd, "sizes", "Message sizes, comma separated, with units (2,64,4KiB). Default: 2 for latency, 64KiB for bandwidth, 8 for atomics.")
	c.setting(cmd, "qps", "Queue pairs, or a comma-separated list of counts to sweep.")
	c.setting(cmd, "pass", "A condition the test must meet, e.g. 'p99 < 20us' (repeatable: all must hold; exit 1 when one fails).").PlaceHolder("EXPR")
	for _, k := range runner.Knobs() {
		help := k.Help
		if k.Unit != "" {
			help += " Unit: " + k.Unit + "."
		}
		for _, a := range k.Aliases {
			help += " Also --" + a + "."
		}
		// No flag default: a knob not given is left to the engine, which
		// applies its defaults in one place (rdma.TestSpec.Complete); the
		// help only says what that default is.
		if !k.IsBool() {
			help += " Default: " + k.Default + "."
		}
		c.knob(cmd, k.Name, k.Flag(), help, k.IsBool())
		for _, a := range k.Aliases {
			c.knob(cmd, k.Name, a, help, k.IsBool()).Hidden()
		}
	}
	c.addFlags(cmd)
	return c
}

// setting registers a flag that gives the case key of its own name.
func (c *benchCmd) setting(cmd *kingpin.CmdClause, key, help string) *kingpin.FlagClause {
	return c.knob(cmd, key, key, help, false)
}

// knob registers flag as a spelling of key.
func (c *benchCmd) knob(cmd *kingpin.CmdClause, key, flag, help string, isBool bool) *kingpin.FlagClause {
	f := cmd.Flag(flag, help)
	f.SetValue(&settingFlag{c: c, key: key, flag: "--" + flag, isBool: isBool})
	return f
}

// settingFlag records a flag's value as a runner.Setting.
type settingFlag struct {
	c         *benchCmd
	key, flag string
	isBool    bool
}

func (f *settingFlag) Set(v string) error {
	f.c.settings = append(f.c.settings, runner.Setting{Key: f.key, As: f.flag, Value: v})
	return nil
}

func (f *settingFlag) String() string { return "" }

// IsBoolFlag makes a switch take no value (kingpin also accepts --no-NAME).
func (f *settingFlag) IsBoolFlag() bool { return f.isBool }

// IsCumulative lets --pass repeat.
func (f *settingFlag) IsCumulative() bool { return f.key == "pass" }

func (c *benchCmd) run(stdout, stderr io.Writer) error {
	sc, err := runner.Single("bench", c.settings)
	if err != nil {
		return &exitError{exitInvalid, err}
	}
	if _, err := parseGID(c.gidIndex); err != nil {
		return &exitError{exitInvalid, err}
	}
	return execute(stdout, stderr, []*runner.Scenario{sc}, []string{""}, &c.where, &c.outputs)
}
