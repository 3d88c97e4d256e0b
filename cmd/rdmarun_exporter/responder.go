package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/exporter/config"
	"github.com/rdmarun/rdmarun/peer"
)

// tokenHowTo is the fix for a missing token, in one line: every node of a
// fleet must hold the same token, so it is made once and copied.
const tokenHowTo = "create the fleet's token once with `rdmarun token --owner rdmarun /etc/rdmarun/token`, copy that same file to every node, name it in responder.token_file, and reload the exporter (systemctl reload rdmarun_exporter, or POST /-/reload)"

// responder is the built-in responder (rdmarun serve's, peer.NewResponder)
// as the configuration and the token file say, at start and at every
// reload. A token file that cannot be read, a network address with
// nothing to tell clients apart, or no device to answer on turns it off
// rather than the exporter: port metrics and probes still work, and a
// reload that finds the token, or the section fixed, turns it on. Once
// on, a reload reads the token file again, so a fleet rotates its token
// with a reload; a token file that cannot be read then keeps the token
// in force, as rdmarun serve does, rather than turn the responder off or
// open. Its other settings take effect at restart: changing them under
// tests in flight would drop those tests, and the rdma_cm port stays
// taken until they end.
type responder struct {
	ctx    context.Context // the responder serves until it ends
	device string          // --device, for a section that names none
	logger *slog.Logger

	enabled, unauthenticated prometheus.Gauge

	// mu makes reloads take turns.
	mu sync.Mutex
	r  *peer.Responder // nil while off
	// on is the section r was started from, token_file as last read.
	on config.Responder
}

func newResponder(ctx context.Context, device string, logger *slog.Logger, reg prometheus.Registerer) *responder {
	x := &responder{ctx: ctx, device: device, logger: logger,
		enabled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmarun_exporter_responder_enabled",
			Help: "1 when the built-in responder answers other nodes' probes."}),
		unauthenticated: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmarun_exporter_responder_unauthenticated",
			Help: "1 when the responder serves a network address without a token or client certificates (responder.allow_unauthenticated)."}),
	}
	// Alerts find a fleet's responders that are off or open.
	reg.MustRegister(x.enabled, x.unauthenticated)
	return x
}

// checkResponder is what --config.check says of the section: an error when the
// token file cannot be read (a mistake in the file, or a missing step of
// the install), and why the responder would be off otherwise. It opens
// nothing.
func checkResponder(cfg config.Responder, device string) (off string, err error) {
	if !cfg.Enabled {
		return "", nil
	}
	_, err = peer.NewResponder(responderSettings(cfg, device))
	if isTokenError(err) {
		return "", errors.New(offReason(err))
	}
	if err != nil {
		return offReason(err), nil
	}
	return "", nil
}

// apply puts the section in force. Its error is what a reload reports:
// a token file that cannot be read (the responder stays off, or keeps
// the token in force), or a control address that cannot be listened on;
// at start, the second ends the exporter.
func (x *responder) apply(cfg config.Responder) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.r != nil {
		return x.reload(cfg)
	}
	if !cfg.Enabled {
		return nil
	}
	settings := responderSettings(cfg, x.device)
	settings.Logger = x.logger
	r, err := peer.NewResponder(settings)
	if err == nil {
		err = r.Listen()
	}
	var se *peer.SettingError
	switch {
	case err == nil:
	case isTokenError(err):
		x.logger.Warn("responder off: other nodes cannot probe this one", "reason", offReason(err))
		return err
	case errors.As(err, &se), errors.Is(err, ctrl.ErrUnauthenticated):
		x.logger.Warn("responder off: other nodes cannot probe this one", "reason", offReason(err))
		return nil
	default:
		x.logger.Error("responder off: it cannot serve", "err", err)
		return fmt.Errorf("responder: %w", err)
	}
	go func() {
		if err := r.Serve(x.ctx); err != nil {
			x.logger.Error("responder stopped", "err", err)
			x.enabled.Set(0)
		}
	}()
	x.r, x.on = r, cfg
	x.enabled.Set(1)
	x.unauthenticated.Set(gauge(r.Open()))
	return nil
}

// reload reads the running responder's token file again, and names the
// settings that changed without taking effect.
func (x *responder) reload(cfg config.Responder) error {
	if keys := changedKeys(reflect.ValueOf(x.on), reflect.ValueOf(cfg), "responder."); len(keys) > 0 {
		x.logger.Warn("responder settings changed; they take effect when the exporter restarts", "keys", strings.Join(keys, ", "))
	}
	changed, err := x.r.ReloadToken(cfg.TokenFile)
	if err != nil {
		x.logger.Warn("responder: keeping the token in force", "err", err)
		return fmt.Errorf("responder: keeping the token in force: %w", err)
	}
	x.on.TokenFile = cfg.TokenFile
	x.unauthenticated.Set(gauge(x.r.Open()))
	if changed {
		// Never the token itself: logs are kept, and read by many.
		x.logger.Info("responder token reloaded: new connections must prove the new one", "file", cfg.TokenFile)
	}
	return nil
}

// serving reports whether the responder answers.
func (x *responder) serving() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.r != nil
}

func isTokenError(err error) bool {
	var se *peer.SettingError
	return errors.As(err, &se) && se.Key == responderKeys.TokenFile
}

// offReason is why the responder is off, with the fix.
func offReason(err error) string {
	switch {
	case isTokenError(err):
		return fmt.Sprintf("%v; %s", err, tokenHowTo)
	case errors.Is(err, ctrl.ErrUnauthenticated):
		return fmt.Sprintf("%v; %s (or set responder.allow_unauthenticated: true to serve anyway)", err, tokenHowTo)
	}
	return err.Error()
}

// changedKeys names the keys whose values differ between two values of
// one struct type, token_file aside: a reload reads it.
func changedKeys(was, now reflect.Value, prefix string) []string {
	var keys []string
	for i := range was.NumField() {
		f := was.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || name == "" || name == "token_file":
		case f.Type.Kind() == reflect.Struct:
			keys = append(keys, changedKeys(was.Field(i), now.Field(i), prefix+name+".")...)
		case !was.Field(i).Equal(now.Field(i)):
			keys = append(keys, prefix+name)
		}
	}
	return keys
}

func gauge(on bool) float64 {
	if on {
		return 1
	}
	return 0
}
