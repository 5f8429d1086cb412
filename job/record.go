package job

import (
	"encoding/json"
	"fmt"
	"maps"

	kjson "sigs.k8s.io/json"

	"github.com/lockctl/lockctl/internal/base/schema"
)

// RecordVersion is the version of the job record this lockctl writes
// (docs/job-record.md). It reads every record of the same major version,
// keeping what it does not know and writing it back unchanged, and refuses
// other major versions with a *VersionError.
const RecordVersion = "1.1"

// recordVersion is RecordVersion parsed.
var recordVersion = schema.MustParse(RecordVersion)

// dataVersion is the data key of a job record ConfigMap holding the
// record's schema version, "MAJOR.MINOR". Records written before versions
// existed have none and are version 1.0.
const dataVersion = "version"

// VersionError reports a job record of a major version this lockctl does
// not read: written by a newer (or much older) lockctl. It matches
// ErrCorrupt, so listings leave the record out and nothing writes it.
type VersionError struct {
	// Name is the job record's name.
	Name string
	// Found is the record's version, Supported the newest this lockctl
	// reads (RecordVersion), both "MAJOR.MINOR".
	Found, Supported string
	// supportedMajor is Supported's major version.
	supportedMajor int
}

// Error implements error.
func (e *VersionError) Error() string {
	return fmt.Sprintf("job %q has record version %s, which this lockctl cannot read (it reads version %d, up to %s)",
		e.Name, e.Found, e.supportedMajor, e.Supported)
}

// Is makes a VersionError match ErrCorrupt.
func (e *VersionError) Is(target error) bool { return target == ErrCorrupt }

// storedRecord is what a job record holds that this lockctl does not know:
// a newer minor version's data keys and fields, kept as they were read and
// written back with the job. It is never changed once decoded, so copies of
// a Job share it.
type storedRecord struct {
	// version is the record's version when newer than RecordVersion.
	version *schema.Version
	// data are the data keys other than spec, status and version.
	data map[string]string
	// spec is the spec as read when it holds fields this lockctl does not
	// know, at any depth; specKnown is the same spec as this lockctl
	// encodes it. A spec still encoding to specKnown is written back as
	// spec, byte for byte.
	spec, specKnown string
	// specUnknown and statusUnknown are the unknown top-level fields of
	// spec and status, kept when the spec changed or the status is
	// rewritten.
	specUnknown, statusUnknown map[string]json.RawMessage
}

// statusFields are JobStatus's JSON fields, found by reflection on first use.
var statusFields schema.FieldSet[JobStatus]

// decodeRecord decodes the data of the job record called name into j and
// returns what it holds that this lockctl does not know (nil when nothing).
func decodeRecord(name string, data map[string]string, j *Job) (*storedRecord, error) {
	version := schema.Version{Major: 1}
	if vs, ok := data[dataVersion]; ok {
		v, err := schema.Parse(vs)
		if err != nil {
			return nil, fmt.Errorf("decode job %q: %v: %w", name, err, ErrCorrupt)
		}
		version = v
	}
	if version.Major != recordVersion.Major {
		return nil, &VersionError{Name: name, Found: version.String(), Supported: RecordVersion, supportedMajor: recordVersion.Major}
	}
	st := &storedRecord{}
	if recordVersion.Less(version) {
		st.version = &version
	}
	for k, v := range data {
		if k != dataSpec && k != dataStatus && k != dataVersion {
			if st.data == nil {
				st.data = map[string]string{}
			}
			st.data[k] = v
		}
	}
	// NOTE: a strict decode costs nothing more when the record holds only
	// known fields, the common case; only a newer record pays for keeping
	// what it adds.
	rawSpec := []byte(data[dataSpec])
	strict, err := kjson.UnmarshalStrict(rawSpec, &j.Spec)
	if err != nil {
		return nil, fmt.Errorf("decode job %q spec: %v: %w", name, err, ErrCorrupt)
	}
	if len(strict) > 0 {
		known, err := json.Marshal(&j.Spec)
		if err != nil {
			return nil, fmt.Errorf("decode job %q spec: %v: %w", name, err, ErrCorrupt)
		}
		st.spec, st.specKnown = string(rawSpec), string(known)
		if st.specUnknown, err = schema.Unknown(rawSpec, schema.Fields(JobSpec{})); err != nil {
			return nil, fmt.Errorf("decode job %q spec: %v: %w", name, err, ErrCorrupt)
		}
	}
	rawStatus := []byte(data[dataStatus])
	if strict, err = kjson.UnmarshalStrict(rawStatus, &j.Status); err != nil {
		return nil, fmt.Errorf("decode job %q status: %v: %w", name, err, ErrCorrupt)
	}
	if len(strict) > 0 {
		if st.statusUnknown, err = schema.Unknown(rawStatus, statusFields.Get()); err != nil {
			return nil, fmt.Errorf("decode job %q status: %v: %w", name, err, ErrCorrupt)
		}
	}
	if st.version == nil && st.data == nil && st.spec == "" && st.statusUnknown == nil {
		return nil, nil
	}
	return st, nil
}

// encodeRecord returns the data of j's record: spec, status and version,
// with what j was read with and this lockctl does not know.
func encodeRecord(j *Job) (map[string]string, error) {
	st := j.stored
	if st == nil {
		st = &storedRecord{}
	}
	spec, err := json.Marshal(&j.Spec)
	if err != nil {
		return nil, fmt.Errorf("encode job %q spec: %w", j.Name, err)
	}
	switch {
	case st.spec != "" && string(spec) == st.specKnown:
		spec = []byte(st.spec)
	case st.specUnknown != nil:
		if spec, err = schema.Merge(spec, st.specUnknown); err != nil {
			return nil, fmt.Errorf("encode job %q spec: %w", j.Name, err)
		}
	}
	status, err := json.Marshal(&j.Status)
	if err == nil {
		status, err = schema.Merge(status, st.statusUnknown)
	}
	if err != nil {
		return nil, fmt.Errorf("encode job %q status: %w", j.Name, err)
	}
	version := recordVersion
	if st.version != nil {
		version = *st.version
	}
	data := make(map[string]string, len(st.data)+3)
	maps.Copy(data, st.data)
	data[dataSpec], data[dataStatus], data[dataVersion] = string(spec), string(status), version.String()
	return data, nil
}
