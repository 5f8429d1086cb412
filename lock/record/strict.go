package record

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The strict decode is Decode's fast path for the usual record, one whose
// every field this lockctl knows (written by this version or an older
// one). It decodes the record in one pass with unknown fields refused,
// into copies of the record's types that lack the decoders keeping
// unknown fields (Record.UnmarshalJSON and its kin): those decode every
// object twice, once as a struct and once as a map of its fields, and
// validate each nested object again, which made a contended lock's record
// (20 claims, 20 past holds, 7 KB) cost about 2 ms to read, for every
// watch event in every waiting process.
//
// A record the strict decode refuses (a newer minor's fields, a broken
// document, a time it cannot parse) goes the whole way, which keeps the
// unknown fields and names what is wrong: the two agree on every record
// the strict decode takes (TestStrictDecodeAgrees, FuzzDecode). Its times
// parsed as metav1.MicroTime, so checkTimes, which names a time the
// decoders refuse, has nothing to find in it and is not run.
type strictRecord struct {
	Version string           `json:"version,omitempty"`
	Target  string           `json:"target"`
	Policy  Policy           `json:"policy"`
	Holder  strictClaim      `json:"holder"`
	Waiters []strictClaim    `json:"waiters,omitempty"`
	Updated metav1.MicroTime `json:"updated"`
	History []strictHistory  `json:"history,omitempty"`
	Freeze  *Freeze          `json:"freeze,omitempty"`
	Ledger  json.RawMessage  `json:"runJobs,omitempty"`
	// BreakGlass has no decoder of its own: its type is used as it is.
	BreakGlass []GrantEntry `json:"breakGlass,omitempty"`
	Frozen     []FrozenSpan `json:"frozen,omitempty"`
}

// strictClaim and strictHistory have the fields of Claim and HistoryEntry
// and none of their methods.
type (
	strictClaim   Claim
	strictHistory HistoryEntry
)

// decodeStrict decodes raw with every field known, and reports whether it
// could.
func decodeStrict(raw string) (*Record, bool) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var s strictRecord
	if err := dec.Decode(&s); err != nil {
		return nil, false
	}
	// One document and nothing after it but JSON's whitespace, as
	// json.Unmarshal wants (not strings.TrimSpace's: "{}\v" is no JSON).
	if strings.TrimLeft(raw[dec.InputOffset():], " \t\r\n") != "" {
		return nil, false
	}
	rec := &Record{
		Version: s.Version,
		Target:  s.Target,
		Policy:  s.Policy,
		Holder:  Claim(s.Holder),
		Updated: s.Updated,
		Freeze:  s.Freeze,

		BreakGlass: s.BreakGlass,
		Frozen:     s.Frozen,
	}
	if s.Waiters != nil {
		rec.Waiters = make([]Claim, len(s.Waiters))
		for i, w := range s.Waiters {
			rec.Waiters[i] = Claim(w)
		}
	}
	if s.History != nil {
		rec.History = make([]HistoryEntry, len(s.History))
		for i, h := range s.History {
			rec.History[i] = HistoryEntry(h)
		}
	}
	rec.Ledger = ledgerOrNil(s.Ledger)
	return rec, true
}
