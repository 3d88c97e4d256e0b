package peer

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/rdma"
)

// ResponderConfig is a responder as its operator sets it up: rdmarun
// serve's flags, rdmarun_exporter's responder section. Both build their
// responder from one with NewResponder, so that neither has a setting
// the other lacks. The caller checks each value's range, where it can
// name the flag or the file's line; NewResponder and Listen check what
// needs the host: the token and TLS files, whether clients can be told
// apart, the device.
type ResponderConfig struct {
	Listen string
	// Device answers the tests that name none; empty, the first device
	// whose Port is ACTIVE when the responder starts.
	Device   string
	Port     int // RDMA port; 0 means 1
	GIDIndex int // rdma.AutoGIDIndex chooses
	// TokenFile holds the fleet's token; empty, $RDMARUN_TOKEN does.
	TokenFile string
	// AllowUnauthenticated serves a network address with no token and
	// no client certificates, and relays for clients that proved
	// nothing: the operator's explicit word.
	AllowUnauthenticated bool
	// TLS serves the control channel over TLS when CertFile is set, and
	// requires client certificates signed by CAFile when that is set.
	TLS ctrl.TLSConfig
	// RelayCA, when set, makes the tests this responder runs against
	// others for a coordinator (relays) dial them over TLS, trusting
	// this CA and presenting TLS's certificate, if it has one.
	RelayCA string
	// NoRelay refuses relayed tests.
	NoRelay bool
	// CMPort is where rdma_cm connections are listened for, on every
	// address; 0 lets the CM pick one, negative listens for none.
	CMPort int
	// The limits, as ServerConfig's.
	MaxTest       time.Duration
	MaxConcurrent int
	MaxSessions   int // negative keeps none
	MaxIdle       time.Duration
	MaxMemory     int64
	MaxQPs        int
	// Keys names the settings in errors, logs and refusals; unset keys
	// take ServeKeys'.
	Keys   ResponderKeys
	Logger *slog.Logger
	// Devices lists the host's devices for the default device; nil
	// means rdma.Devices.
	Devices func() ([]rdma.Device, error)
}

// ResponderKeys names a responder's settings as its operator writes
// them: rdmarun serve's flags (ServeKeys) unless the program embedding
// the responder has its own (rdmarun_exporter's responder.* keys).
type ResponderKeys struct {
	LimitKeys
	TokenFile string // ResponderConfig.TokenFile
	RelayCA   string // ResponderConfig.RelayCA
	NoCM      string // a negative CMPort
}

// ServeKeys are rdmarun serve's flags, the default ResponderKeys.
var ServeKeys = ResponderKeys{LimitKeys: ServeLimitKeys, TokenFile: "--token-file", RelayCA: "--tls-ca", NoCM: "--no-cm"}

func (k ResponderKeys) or(d ResponderKeys) ResponderKeys {
	return ResponderKeys{LimitKeys: k.LimitKeys.or(d.LimitKeys), TokenFile: cmp.Or(k.TokenFile, d.TokenFile),
		RelayCA: cmp.Or(k.RelayCA, d.RelayCA), NoCM: cmp.Or(k.NoCM, d.NoCM)}
}

// SettingError is a setting that keeps a responder from starting, named
// as its operator sets it (ResponderKeys).
type SettingError struct {
	Key string
	Err error
}

func (e *SettingError) Error() string { return e.Key + ": " + e.Err.Error() }

func (e *SettingError) Unwrap() error { return e.Err }

// Responder is a responder assembled from a ResponderConfig.
type Responder struct {
	cfg     ResponderConfig
	token   string
	tls     *tls.Config
	dialTLS *tls.Config
	srv     *Server
	ln      net.Listener
	device  string

	// mu orders ReloadTokens and guards open.
	mu sync.Mutex
	// open: the responder serves a network address to clients that
	// prove nothing, since its operator allowed it.
	open bool
}

// NewResponder checks cfg against the host without opening anything: it
// reads the token, loads the TLS files, and refuses a responder on a
// network address with nothing to tell its clients apart (an error that
// matches ctrl.ErrUnauthenticated) unless cfg allows it. Its errors are
// the settings'; a token or CA file that cannot be read is a
// *SettingError naming its key.
func NewResponder(cfg ResponderConfig) (*Responder, error) {
	cfg.Keys = cfg.Keys.or(ServeKeys)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Devices == nil {
		cfg.Devices = rdma.Devices
	}
	token, err := ctrl.ReadToken(cfg.TokenFile)
	if err != nil {
		return nil, &SettingError{Key: cfg.Keys.TokenFile, Err: err}
	}
	r := &Responder{cfg: cfg, token: token}
	if err := ctrl.CheckAuthenticated(cfg.Listen, token, cfg.TLS); err != nil {
		if !cfg.AllowUnauthenticated {
			return nil, err
		}
		r.open = true
	}
	if t := cfg.TLS; t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" {
		if r.tls, err = t.ServerConfig(); err != nil {
			return nil, err
		}
	}
	if cfg.RelayCA != "" {
		dial := ctrl.TLSConfig{CAFile: cfg.RelayCA, CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile}
		if r.dialTLS, err = dial.ClientConfig(); err != nil {
			return nil, &SettingError{Key: cfg.Keys.RelayCA, Err: err}
		}
	}
	return r, nil
}

// Listen chooses the default device when the configuration names none,
// makes the server and opens its listeners: rdma_cm's first, since a
// client that reaches the control port may connect its QPs through the
// CM at once. Its errors are the host's: no device to answer on (a
// *SettingError naming the device's key), the address taken. A CM
// listener that cannot start leaves the responder serving connect:
// exchange tests, which is all a host without rdma_ucm can do; the
// warning says why, as each refused connect: rdma_cm test does.
func (r *Responder) Listen() error {
	c := r.cfg
	dev := c.Device
	if dev == "" {
		devs, err := c.Devices()
		if err == nil {
			dev, err = FirstActive(devs, max(c.Port, 1))
		}
		if err != nil {
			return &SettingError{Key: c.Keys.Device, Err: fmt.Errorf("none named, and %w", err)}
		}
	}
	srv, err := NewServer(ServerConfig{
		Device: dev, Port: c.Port, GIDIndex: c.GIDIndex, Token: r.token,
		MaxTest: c.MaxTest, MaxConcurrent: c.MaxConcurrent, MaxSessions: c.MaxSessions, MaxIdle: c.MaxIdle,
		MaxMemory: c.MaxMemory, MaxQPs: c.MaxQPs, LimitKeys: c.Keys.LimitKeys, Logger: c.Logger,
		DialTLS: r.dialTLS, RelayUnauthenticated: c.AllowUnauthenticated, NoRelay: c.NoRelay,
	})
	if err != nil {
		return err
	}
	r.listenCM(srv)
	ln, err := ctrl.Listen(c.Listen, r.tls)
	if err != nil {
		srv.CloseCM()
		return err
	}
	r.srv, r.ln, r.device = srv, ln, dev
	return nil
}

func (r *Responder) listenCM(srv *Server) {
	log := r.cfg.Logger
	if r.cfg.CMPort < 0 {
		log.Info("responder not listening for rdma_cm connections (" + r.cfg.Keys.NoCM + ")")
		return
	}
	addr, err := srv.ListenCM(netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(r.cfg.CMPort)))
	if err != nil {
		log.Warn("responder not listening for rdma_cm connections; tests with connect: rdma_cm will be refused", "cm_port", r.cfg.CMPort, "err", err)
		return
	}
	log.Info("responder listening for rdma_cm connections", "cm_listen", addr.String())
}

// Serve answers clients until ctx ends, then waits for the tests under
// way (they end within their bounds).
func (r *Responder) Serve(ctx context.Context) error {
	log := r.cfg.Logger
	if r.Open() {
		log.Warn("serving without authentication ("+r.cfg.Keys.Unauthenticated+")", "listen", r.ln.Addr().String(),
			"risk", "anyone who connects gets rkeys to this host's registered memory")
	}
	log.Info("responder serving", "listen", r.ln.Addr().String(), "device", r.device, "tls", r.tls != nil,
		"token", r.token != "", "relay", !r.cfg.NoRelay)
	if err := r.srv.Serve(ctx, r.ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// ReloadToken reads the token file again, file as the configuration now
// names it (empty: $RDMARUN_TOKEN), and makes its token the one new
// connections must prove; tests past their handshake go on. A file that
// cannot be read or is empty, or no token where one is in force, keeps
// the token in force: a rotation half done must not turn authentication
// off. changed reports a token other than the one in force. Neither
// token is ever in the error.
func (r *Responder) ReloadToken(file string) (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	token, err := ctrl.ReadToken(file)
	if err != nil {
		return false, &SettingError{Key: r.cfg.Keys.TokenFile, Err: err}
	}
	if token == *r.srv.token.Load() {
		return false, nil
	}
	if err := r.srv.SetToken(token); err != nil {
		return false, err
	}
	// A token makes an open responder one that tells clients apart.
	r.open = r.open && token == ""
	return true, nil
}

// Open reports whether the responder serves a network address to
// clients that prove nothing (AllowUnauthenticated, and no token yet).
func (r *Responder) Open() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open
}

// Server is the responder's server, for its counts.
func (r *Responder) Server() *Server { return r.srv }

// Addr is the control channel's address, once listening.
func (r *Responder) Addr() net.Addr { return r.ln.Addr() }

// Device is the device the responder answers on when a test names none.
func (r *Responder) Device() string { return r.device }

// FirstActive is the first of devs whose port is ACTIVE: the device a
// responder answers on, and a client tests from, when none is named.
// The rule is rdma.FirstActive's; this adds what to say when none is.
func FirstActive(devs []rdma.Device, port int) (string, error) {
	if name, ok := rdma.FirstActive(devs, port); ok {
		return name, nil
	}
	if len(devs) == 0 {
		return "", rdma.ErrNoDevice
	}
	return "", fmt.Errorf("no device has an ACTIVE port %d (see rdmarun devices)", port)
}

// answerOn is the device and GID index a test runs on: the ones the
// client (who) asked for, else the responder's own.
func (s *Server) answerOn(device string, gidIndex *int, who string) (string, int, error) {
	dev := cmp.Or(device, s.cfg.Device)
	if dev == "" {
		return "", 0, fmt.Errorf("no device named by the %s and none configured on the responder (%s)", who, s.cfg.LimitKeys.Device)
	}
	gid := s.cfg.GIDIndex
	if gidIndex != nil {
		gid = *gidIndex
	}
	return dev, gid, nil
}
