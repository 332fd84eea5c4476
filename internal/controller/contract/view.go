package contract

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	contractplan "github.com/capwright/capwright/internal/plan/contract"
)

// The default expressions read kany8s' normalized status.
const (
	defaultReady    = `has(status.ready) && status.ready == true`
	defaultEndpoint = `has(status.endpoint) ? status.endpoint : ""`
	defaultVersion  = `has(status.version) ? status.version : ""`
	defaultReason   = `has(status.reason) ? status.reason : ""`
	defaultMessage  = `has(status.message) ? status.message : ""`
)

// expressions are a StatusFrom's compiled expressions.
type expressions struct {
	ready, endpoint, version, reason, message *cel.Expression
}

// expressionCache keeps parsed expressions by their text: objects of a
// ClusterClass share them, and parsing costs more than evaluating.
type expressionCache struct {
	mu    sync.Mutex
	exprs map[string]*cel.Expression
}

func (c *expressionCache) parse(field, expr string) (*cel.Expression, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.exprs[expr]; ok {
		return e, nil
	}
	// Parsed, not compiled, as Flux's healthCheckExprs are: a backend
	// object need not have the standard top-level fields.
	e, err := cel.NewExpression(expr)
	if err != nil {
		return nil, fmt.Errorf("%s does not parse as a CEL expression: %w", field, err)
	}
	if c.exprs == nil {
		c.exprs = map[string]*cel.Expression{}
	}
	if len(c.exprs) > 1024 {
		clear(c.exprs)
	}
	c.exprs[expr] = e
	return e, nil
}

// compile parses the expressions of s (defaults for those left empty);
// the error names the field.
func (c *expressionCache) compile(s *clustersv1alpha1.StatusFrom) (*expressions, error) {
	var out expressions
	for _, f := range []struct {
		field, expr, def string
		into             **cel.Expression
	}{
		{"spec.statusFrom.ready", s.Ready, defaultReady, &out.ready},
		{"spec.statusFrom.endpoint", s.Endpoint, defaultEndpoint, &out.endpoint},
		{"spec.statusFrom.version", s.Version, defaultVersion, &out.version},
		{"spec.statusFrom.reason", s.Reason, defaultReason, &out.reason},
		{"spec.statusFrom.message", s.Message, defaultMessage, &out.message},
	} {
		expr := f.expr
		if strings.TrimSpace(expr) == "" {
			expr = f.def
		}
		e, err := c.parse(f.field, expr)
		if err != nil {
			return nil, err
		}
		*f.into = e
	}
	return &out, nil
}

// viewError is a status view that cannot be read; Field names the
// expression.
type viewError struct {
	Field string
	Err   error
}

func (e *viewError) Error() string { return e.Field + ": " + e.Err.Error() }

// evaluate reads the view of obj. An object without spec or status is
// evaluated as if they were empty, so `has(status.ready)` is simply false
// on an object no controller has reported on yet.
func (x *expressions) evaluate(ctx context.Context, obj *unstructured.Unstructured) (contractplan.View, error) {
	data := make(map[string]any, len(obj.Object)+2)
	for k, v := range obj.Object {
		data[k] = v
	}
	for _, k := range []string{"spec", "status"} {
		if _, ok := data[k]; !ok {
			data[k] = map[string]any{}
		}
	}
	var v contractplan.View
	if observed, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); ok && observed != obj.GetGeneration() {
		v.Stale = true
	}
	var err error
	if v.Ready, err = x.ready.EvaluateBoolean(ctx, data); err != nil {
		return contractplan.View{}, &viewError{"spec.statusFrom.ready", err}
	}
	var endpoint string
	strs := []struct {
		field string
		e     *cel.Expression
		into  *string
	}{
		{"spec.statusFrom.endpoint", x.endpoint, &endpoint},
		{"spec.statusFrom.version", x.version, &v.Version},
		{"spec.statusFrom.reason", x.reason, &v.Reason},
		{"spec.statusFrom.message", x.message, &v.Message},
	}
	for _, s := range strs {
		if *s.into, err = s.e.EvaluateString(ctx, data); err != nil {
			return contractplan.View{}, &viewError{s.field, err}
		}
	}
	if endpoint != "" {
		if v.Endpoint, err = parseEndpoint(endpoint); err != nil {
			return contractplan.View{}, &viewError{"spec.statusFrom.endpoint", err}
		}
	}
	if v.Stale {
		v.Ready = false
	}
	return v, nil
}

// parseEndpoint reads host[:port] or an https:// URL (port 443 unless
// given).
func parseEndpoint(s string) (clustersv1alpha1.APIEndpoint, error) {
	bad := func() (clustersv1alpha1.APIEndpoint, error) {
		return clustersv1alpha1.APIEndpoint{}, fmt.Errorf("the backend's endpoint %q is neither host[:port] nor an https:// URL", s)
	}
	host, port := s, "443"
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
			return bad()
		}
		host = u.Hostname()
		if p := u.Port(); p != "" {
			port = p
		}
	} else if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.Contains(s, ":") && net.ParseIP(s) == nil {
		return bad()
	}
	if host == "" || strings.ContainsAny(host, "/ @?#") {
		return bad()
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return bad()
	}
	return clustersv1alpha1.APIEndpoint{Host: host, Port: int32(n)}, nil
}
