package lock

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Tokens are the fencing tokens of one hold across clusters, by the
// kubeconfig context of each cluster: each cluster's lock keeps its own
// record and its own token (Held.Token, the resourceVersion of the write
// that made the caller its holder there). String spells them as one
// composite token, CONTEXT=TOKEN,CONTEXT=TOKEN in context order, which
// ParseTokens reads back: what lockctl prints for such a hold, gives a
// command it runs, and takes from a script (release --token, stamp).
type Tokens map[string]string

// TokensOf returns the tokens of held, a hold across clusters, by
// context. A lock without a context (one cluster) is left out.
func TokensOf(held []*Held) Tokens {
	t := Tokens{}
	for _, h := range held {
		if h.Context != "" {
			t[h.Context] = h.Token
		}
	}
	return t
}

// String spells t as one composite token: CONTEXT=TOKEN pairs in context
// order, joined by commas.
func (t Tokens) String() string {
	var b strings.Builder
	for i, ctx := range slices.Sorted(maps.Keys(t)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ctx + "=" + t[ctx])
	}
	return b.String()
}

// IsComposite reports whether token is a composite token (Tokens.String)
// rather than the fencing token of one cluster's lock.
func IsComposite(token string) bool { return strings.Contains(token, "=") }

// ParseTokens reads a composite token, CONTEXT=TOKEN,CONTEXT=TOKEN. A pair
// without a context or a token, or a context named twice, is an error
// naming it. Each pair is cut at its last "=": a token never holds one, a
// context may.
func ParseTokens(s string) (Tokens, error) {
	t := Tokens{}
	for _, pair := range strings.Split(s, ",") {
		i := strings.LastIndex(pair, "=")
		ctx, tok := strings.TrimSpace(pair[:max(i, 0)]), strings.TrimSpace(pair[i+1:])
		switch {
		case i < 0 || ctx == "" || tok == "":
			return nil, fmt.Errorf("invalid composite token %q: %q is not CONTEXT=TOKEN", s, pair)
		case t[ctx] != "":
			return nil, fmt.Errorf("invalid composite token %q: context %q is named twice", s, ctx)
		}
		t[ctx] = tok
	}
	return t, nil
}

// For returns the token of context's cluster, and false when t has none.
func (t Tokens) For(context string) (string, bool) {
	tok, ok := t[context]
	return tok, ok
}
