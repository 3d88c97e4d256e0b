package runner

import (
	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/rdma"
)

// Setting is one value for a case key (op, measure, sizes, qps, mode,
// pass) or a knob, given as text: how `rdmarun bench` hands its flags
// to the loader.
type Setting struct {
	Key   string // the case key or knob name
	As    string // as the user spelled it ("--iters"), for errors
	Value string
}

// Single builds a scenario of one case, named name, from settings, through
// the checks a case in a file gets; errors name the settings as spelled.
// A key given twice keeps its last value, except pass, whose conditions
// must all hold. The scenario runs on loopback, device auto, until its
// fields say otherwise. The error, when there is one, is an ErrorList.
func Single(name string, settings []Setting) (*Scenario, error) {
	l := &loader{spelled: map[string]string{}}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	values := map[string]*yaml.Node{}
	var order []string
	pass := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, s := range settings {
		l.spelled[s.Key] = s.As
		if s.Key == "pass" {
			pass.Content = append(pass.Content, str(s.Value))
			continue
		}
		if _, seen := values[s.Key]; !seen {
			order = append(order, s.Key)
		}
		values[s.Key] = str(s.Value)
	}
	c := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("name"), str(name)}}
	for _, k := range order {
		c.Content = append(c.Content, str(k), values[k])
	}
	if len(pass.Content) > 0 {
		c.Content = append(c.Content, str("pass"), pass)
	}
	sc := &Scenario{Name: name, Device: "auto", Port: 1, GIDIndex: rdma.AutoGIDIndex, Peer: PeerLoopback}
	l.parseCases(sc, c, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{c}}, &caseDef{})
	if err := l.c.Err(); err != nil {
		return nil, err
	}
	return sc, nil
}
