package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrConfig matches every *ConfigError.
var ErrConfig = errors.New("invalid configuration")

// ConfigError is a configuration file that can not be used, naming the key
// at fault.
type ConfigError struct {
	// Source names the file.
	Source string
	// Key is the path of the bad key, such as "timeouts.pending"; empty for
	// a file that does not parse.
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("config %s: %s", e.Source, e.Msg)
	}
	return fmt.Sprintf("config %s: %s: %s", e.Source, e.Key, e.Msg)
}

// Is makes a ConfigError match ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Config is the reconcile loop's configuration file (lockctl reconcile
// --config). Flags override its values.
type Config struct {
	// MaxConcurrency is the global maximum of running jobs; 0 means none.
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// QueueCapacities maps a job queue to its capacity (0: nothing runs,
	// negative: no limit).
	QueueCapacities map[string]int `json:"queueCapacities,omitempty"`
	// Timeouts are Go durations ("5m", "48h"); empty keeps the default.
	Timeouts ConfigTimeouts `json:"timeouts,omitempty"`
	// RevivalLimit is how often a lost pod is recreated; nil keeps the
	// default (DefaultRevivalLimit), negative means no limit; 0 is refused.
	RevivalLimit *int `json:"revivalLimit,omitempty"`
	// PodNamespace is the namespace of job pods in the build clusters.
	PodNamespace string `json:"podNamespace,omitempty"`
	// BuildClusters maps a build-cluster alias to a kubeconfig context.
	BuildClusters map[string]string `json:"buildClusters,omitempty"`
	// Retention is how long finished jobs and their pods are kept.
	Retention ConfigRetention `json:"retention,omitempty"`
	// JobURLTemplate is a Go template for status.url, executed with the job.
	JobURLTemplate string `json:"jobURLTemplate,omitempty"`
	// Workers is how many jobs are reconciled at once; nil keeps the
	// default (DefaultWorkers); 0 or less is refused.
	Workers *int `json:"workers,omitempty"`
}

// ConfigTimeouts are the pod timeouts of a Config: Go durations, empty
// keeps the default, negative means never; 0 is refused.
type ConfigTimeouts struct {
	Unscheduled string `json:"unscheduled,omitempty"`
	Pending     string `json:"pending,omitempty"`
	Running     string `json:"running,omitempty"`
}

// ParseConfig decodes and checks a configuration file strictly: an unknown
// key, a value of the wrong type or an invalid value returns a *ConfigError
// naming the key.
func ParseConfig(data []byte, source string) (*Config, error) {
	raw, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &ConfigError{Source: source, Msg: strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}
	}
	c := &Config{}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return c, nil
	}
	strict, err := kjson.UnmarshalStrict(raw, c)
	if err != nil {
		return nil, decodeConfigError(source, raw, err)
	}
	if len(strict) > 0 {
		var fe kjson.FieldError
		if errors.As(strict[0], &fe) {
			return nil, &ConfigError{Source: source, Key: fe.FieldPath(), Msg: "unknown key; valid keys here: " + strings.Join(configKeys(fe.FieldPath()), ", ")}
		}
		return nil, &ConfigError{Source: source, Msg: strict[0].Error()}
	}
	if _, err := c.Options(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.Source = source
		}
		return nil, err
	}
	return c, nil
}

func decodeConfigError(source string, raw []byte, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		key := withMapKey(raw, te.Field, te.Value)
		return &ConfigError{Source: source, Key: key, Msg: fmt.Sprintf("must be %s, not %s", configForm(key, te.Type.Kind().String()), article(te.Value))}
	}
	return &ConfigError{Source: source, Msg: strings.TrimPrefix(err.Error(), "json: ")}
}

// withMapKey completes the path of a bad value inside a map, which the
// decoder reports as the map's own path, with the first key whose value has
// the offending JSON type ("string", "number", "bool", "array", "object").
func withMapKey(raw []byte, path, jsonType string) string {
	var node any
	if json.Unmarshal(raw, &node) != nil {
		return path
	}
	for _, part := range strings.Split(path, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			return path
		}
		node = m[part]
	}
	m, ok := node.(map[string]any)
	if !ok {
		return path
	}
	for _, k := range sortedKeys(m) {
		if jsonTypeOf(m[k]) == jsonType {
			return path + "." + k
		}
	}
	return path
}

func jsonTypeOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// Options returns the Options the configuration describes, or a
// *ConfigError naming an invalid key.
func (c *Config) Options() (Options, error) {
	o := Options{
		MaxConcurrency:  c.MaxConcurrency,
		QueueCapacities: c.QueueCapacities,
		PodNamespace:    c.PodNamespace,
		JobURLTemplate:  c.JobURLTemplate,
	}
	if c.RevivalLimit != nil {
		o.RevivalLimit = *c.RevivalLimit
	}
	if c.Workers != nil {
		o.Workers = *c.Workers
	}
	var err error
	for _, d := range []struct {
		key string
		val string
		dst *time.Duration
	}{
		{"timeouts.unscheduled", c.Timeouts.Unscheduled, &o.UnscheduledTimeout},
		{"timeouts.pending", c.Timeouts.Pending, &o.PendingTimeout},
		{"timeouts.running", c.Timeouts.Running, &o.RunningTimeout},
	} {
		if d.val == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.val); err != nil {
			return o, &ConfigError{Key: d.key, Msg: fmt.Sprintf("%q is not a duration such as 10m or 48h", d.val)}
		}
		if *d.dst == 0 {
			return o, &ConfigError{Key: d.key, Msg: "must not be 0: give a duration such as 10m, or a negative one for never (leave it out for the default)"}
		}
	}
	return o, c.check()
}

func (c *Config) check() error {
	if c.MaxConcurrency < 0 {
		return &ConfigError{Key: "maxConcurrency", Msg: "must be 0 (no limit) or more"}
	}
	if c.Workers != nil && *c.Workers < 1 {
		return &ConfigError{Key: "workers", Msg: "must be 1 or more (leave it out for the default)"}
	}
	if c.RevivalLimit != nil && *c.RevivalLimit == 0 {
		return &ConfigError{Key: "revivalLimit", Msg: "must not be 0: give how often a lost pod is recreated, or a negative number for no limit (leave it out for the default)"}
	}
	for _, q := range sortedKeys(c.QueueCapacities) {
		if msgs := validation.IsValidLabelValue(q); len(msgs) > 0 || q == "" {
			return &ConfigError{Key: "queueCapacities." + q, Msg: "not a valid queue name"}
		}
	}
	for _, alias := range sortedKeys(c.BuildClusters) {
		if msgs := validation.IsValidLabelValue(alias); len(msgs) > 0 || alias == "" {
			return &ConfigError{Key: "buildClusters." + alias, Msg: "not a valid cluster alias"}
		}
		if c.BuildClusters[alias] == "" {
			return &ConfigError{Key: "buildClusters." + alias, Msg: "needs a kubeconfig context"}
		}
	}
	if c.PodNamespace != "" {
		if msgs := validation.IsDNS1123Label(c.PodNamespace); len(msgs) > 0 {
			return &ConfigError{Key: "podNamespace", Msg: msgs[0]}
		}
	}
	if c.JobURLTemplate != "" {
		if _, err := template.New("url").Option("missingkey=error").Parse(c.JobURLTemplate); err != nil {
			return &ConfigError{Key: "jobURLTemplate", Msg: err.Error()}
		}
	}
	_, err := c.Retention.PruneOptions()
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configKeys lists the keys valid beside the key at path ("timeouts.pendng"
// lists the keys of timeouts), from the json tags of Config.
func configKeys(path string) []string {
	t := reflect.TypeOf(Config{})
	parts := strings.Split(path, ".")
	for _, part := range parts[:len(parts)-1] {
		f, ok := fieldByTag(t, part)
		if !ok || f.Type.Kind() != reflect.Struct {
			break
		}
		t = f.Type
	}
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// configForm says what the value at key looks like, for a value of the
// wrong type; kind is the Go kind the decoder wanted.
func configForm(key, kind string) string {
	top, _, nested := strings.Cut(key, ".")
	switch {
	case top == "timeouts" && nested:
		return "a duration such as 10m or 48h"
	case top == "timeouts":
		return "a mapping such as {unscheduled: 5m, pending: 10m, running: 2h}"
	case top == "queueCapacities" && nested:
		return "a whole number such as 2 (0: nothing runs, negative: no limit)"
	case top == "queueCapacities":
		return "a mapping of queue names to capacities such as {deploys: 1}"
	case top == "buildClusters" && nested:
		return "a kubeconfig context name"
	case top == "buildClusters":
		return "a mapping of cluster aliases to kubeconfig contexts such as {gpu: gpu-context}"
	case top == "maxConcurrency":
		return "a whole number such as 10 (0: no limit)"
	case top == "revivalLimit":
		return "a whole number such as 3 (negative: no limit)"
	case top == "workers":
		return "a whole number such as 16"
	case top == "podNamespace":
		return "a namespace name"
	case top == "retention" && nested:
		return "a duration such as 168h (0s: keep everything)"
	case top == "retention":
		return "a mapping such as {jobs: 168h, pods: 24h}"
	case top == "jobURLTemplate":
		return "a Go template such as https://ci.example/{{.Spec.Job}}/{{.Status.BuildID}}"
	}
	return kind
}

// article prefixes a JSON type name with "a" or "an".
func article(jsonType string) string {
	switch jsonType {
	case "array", "object":
		return "an " + jsonType
	case "":
		return "something else"
	}
	return "a " + jsonType
}
