// Package config reads rdmarun_exporter's YAML configuration: the modules that
// say how to probe, the targets to probe and the built-in responder.
//
// Defaults and checks live in the types' UnmarshalYAML methods, as in
// blackbox_exporter, so a file that loads is a file that can run: every
// module's test specs already passed rdma's own checks. Before they run,
// the file is checked against the types' shapes (internal/yamlerr), so
// that a value of the wrong kind or an unknown key is reported at its
// line and column under its key path, with what to write instead.
package config

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/ctrl"
	"github.com/rdmarun/rdmarun/internal/yamlerr"
)

// Config is a whole configuration file.
type Config struct {
	Modules   map[string]Module
	Targets   Targets
	Responder Responder
	// Mesh is the zero Mesh (off) when the file has no mesh section.
	Mesh Mesh
	// Doctor is on, every DefaultDoctorInterval, when the file has no
	// doctor section.
	Doctor Doctor
}

// Load reads and checks the configuration file at path. Relative paths in
// it (target files, token and TLS files) are taken relative to the file's
// directory, so the config works from any working directory.
//
// A value of the wrong shape, an unknown key and a syntax error are
// reported as a yamlerr.List, each placed at path:line:col with its key
// path; other errors name the file and the key.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(path, b)
	if err != nil {
		return nil, inFile("config", path, err)
	}
	c.resolvePaths(filepath.Dir(path))
	// The files are read now, so that a missing CA fails the load (and a
	// reload keeps the old config) instead of every probe.
	for _, name := range slices.Sorted(maps.Keys(c.Modules)) {
		if t := c.Modules[name].TLS; t.Enabled() {
			if err := t.Ctrl().Validate(); err != nil {
				return nil, fmt.Errorf("config %s: module %q: tls: %w", path, name, err)
			}
		}
	}
	if r := c.Responder; r.Enabled && r.TLS.CertFile != "" {
		if err := r.TLS.Ctrl().Validate(); err != nil {
			return nil, fmt.Errorf("config %s: responder: tls: %w", path, err)
		}
	}
	if r := c.Responder; r.Enabled && r.TLS.RelayCAFile != "" {
		if err := (ctrl.TLSConfig{CAFile: r.TLS.RelayCAFile}).Validate(); err != nil {
			return nil, fmt.Errorf("config %s: responder: tls: relay_ca_file: %w", path, err)
		}
	}
	return c, nil
}

// Parse reads a configuration from YAML. Unknown keys are errors, since a
// misspelt key silently taking its default is worse than a failed load.
func Parse(b []byte) (*Config, error) { return parse("", b) }

func parse(name string, b []byte) (*Config, error) {
	root, err := checkShape(name, b, reflect.TypeFor[configYAML](), yamlerr.Schema{As: shapes})
	if err != nil {
		return nil, err
	}
	if isEmpty(root) {
		// An empty file is a node that only answers probes.
		return &Config{Targets: defaultTargets, Responder: defaultResponder, Doctor: defaultDoctor}, nil
	}
	c := &Config{}
	if err := decodeStrict(b, c); err != nil {
		return nil, err
	}
	// The responder's values are checked here, not as they decode: here
	// their places in the file are known.
	errs := &yamlerr.Collector{File: name}
	c.Responder.check(errs, valueOf(root, "responder"))
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// isEmpty reports whether a document holds no value at all.
func isEmpty(root *yaml.Node) bool { return root == nil || yamlerr.IsNull(root) }

// shapes are the types that decode themselves from YAML of another shape
// than their fields', for yamlerr.Schema.
var shapes = map[reflect.Type]reflect.Type{
	reflect.TypeFor[Labels](): reflect.TypeFor[map[string]string](),
	reflect.TypeFor[Mesh]():   reflect.TypeFor[meshYAML](),
}

// checkShape reports every value of b that does not fit t, and every
// unknown key, placed in the file called name, before the decoder sees
// them: it would report only the first, by line and Go type. It returns
// the document's top node, nil when b holds none.
func checkShape(name string, b []byte, t reflect.Type, s yamlerr.Schema) (*yaml.Node, error) {
	c := &yamlerr.Collector{File: name}
	root := yamlerr.Parse(c, b)
	if root != nil {
		s.Check(c, root, t)
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return root, nil
}

// decodeStrict decodes what checkShape passed. Unknown keys are refused
// again, so that a key the check missed fails the load rather than being
// dropped; FuzzLoad checks that the decoder finds none the check missed.
func decodeStrict(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// inFile names the file in err, unless err places its problems there
// already.
func inFile(what, path string, err error) error {
	if _, placed := err.(yamlerr.List); placed {
		return err
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// CheckTargets reports the first target whose module is not configured.
func (c *Config) CheckTargets(ts []Target) error {
	for _, t := range ts {
		if err := c.checkModule("target", t.Name, t.Module); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkModule(kind, name, module string) error {
	if _, ok := c.Modules[module]; ok {
		return nil
	}
	names := make([]string, 0, len(c.Modules))
	for n := range c.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	return fmt.Errorf("%s %q: module %q is not defined; modules: %s", kind, name, module, list)
}

func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range c.Targets.Files {
		abs(&c.Targets.Files[i])
	}
	for name, m := range c.Modules {
		abs(&m.TLS.CAFile)
		abs(&m.TLS.CertFile)
		abs(&m.TLS.KeyFile)
		c.Modules[name] = m
	}
	abs(&c.Responder.TokenFile)
	abs(&c.Responder.TLS.CertFile)
	abs(&c.Responder.TLS.KeyFile)
	abs(&c.Responder.TLS.ClientCAFile)
	abs(&c.Responder.TLS.RelayCAFile)
}

// configYAML is a Config as written.
type configYAML struct {
	Modules   map[string]moduleYAML `yaml:"modules" want:"a mapping of module name to its settings, such as modules: {default: {count: 10}}"`
	Targets   Targets               `yaml:"targets"`
	Responder Responder             `yaml:"responder"`
	Mesh      Mesh                  `yaml:"mesh"`
	Doctor    Doctor                `yaml:"doctor"`
}

// UnmarshalYAML implements yaml.Unmarshaler. It uses the older
// function-argument form on purpose: yaml.Node.Decode starts a fresh
// decoder that forgets KnownFields, the function form keeps it.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	raw := configYAML{Targets: defaultTargets, Responder: defaultResponder, Doctor: defaultDoctor}
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*c = Config{Targets: raw.Targets, Responder: raw.Responder, Mesh: raw.Mesh, Doctor: raw.Doctor, Modules: make(map[string]Module, len(raw.Modules))}
	// Sorted, so that of several bad modules the same one is reported
	// every time.
	names := make([]string, 0, len(raw.Modules))
	for n := range raw.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		m, err := raw.Modules[n].module()
		if err != nil {
			return fmt.Errorf("module %q: %w", n, err)
		}
		c.Modules[n] = m
	}
	if err := c.CheckTargets(c.Targets.Static); err != nil {
		return err
	}
	if err := c.checkStaticBounds(); err != nil {
		return err
	}
	for _, d := range c.Targets.DNS {
		if err := c.checkModule("dns target", d.Name, d.Module); err != nil {
			return err
		}
	}
	return nil
}
