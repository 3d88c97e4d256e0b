package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"strconv"

	"github.com/alecthomas/kingpin/v2"
	"github.com/rdmarun/rdmarun/ctrl"
)

// tokenCmd writes the fleet's shared token. The token itself is never
// printed: it is a secret, and terminals and CI logs are kept.
type tokenCmd struct {
	file    string
	force   bool
	owner   string
	command *kingpin.CmdClause
}

func newTokenCmd(app *kingpin.Application) *tokenCmd {
	c := &tokenCmd{}
	c.command = app.Command("token", "Write a new random token to FILE (mode 0600). Make it once and copy the same file to every node: responders, clients and exporters of a fleet share one token.")
	c.command.Arg("file", "Where to write the token, e.g. /etc/rdmarun/token.").Required().StringVar(&c.file)
	c.command.Flag("force", "Replace an existing token file (every node then needs the new one).").BoolVar(&c.force)
	c.command.Flag("owner", "Give the file to this user and its primary group, e.g. rdmarun for the packaged services (needs root).").StringVar(&c.owner)
	return c
}

func (c *tokenCmd) run(stdout io.Writer) error {
	uid, gid := -1, -1
	if c.owner != "" {
		u, err := user.Lookup(c.owner)
		if err != nil {
			return &exitError{exitInvalid, fmt.Errorf("--owner %s: %w", c.owner, err)}
		}
		// On Unix both are decimal ids.
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	err := ctrl.WriteToken(c.file, c.force, uid, gid)
	switch {
	case errors.Is(err, fs.ErrExist):
		return &exitError{exitInvalid, fmt.Errorf("%s exists and may be the fleet's token: keep it, or pass --force to replace it (every node then needs the new file)", c.file)}
	case err != nil:
		return &exitError{exitEnvironment, err}
	}
	fmt.Fprintf(stdout, "wrote a new token to %s (mode 0600). Copy this same file to every node that runs rdmarun serve, rdmarun clients or rdmarun_exporter, keeping it readable only by the user they run as.\n", c.file)
	return nil
}
