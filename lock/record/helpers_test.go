package record

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

const waiterTTL = time.Minute

// claim builds a claim of acme/<repo>@<branch>#<build> with session s.
func claim(s, repo, branch, build string) Claim {
	return Claim{
		Identity: Identity{Owner: "acme", Repo: repo, Branch: branch, Build: build},
		ClaimID:  s,
		TTL:      metav1.Duration{Duration: time.Hour},
		Target:   "staging",
	}
}

func held(c Claim, since time.Time) Claim {
	c.Since = metav1.NewMicroTime(since)
	c.Expires = microPtr(since.Add(time.Hour))
	return c
}

func queued(c Claim, since time.Time) Claim {
	c.Since = metav1.NewMicroTime(since)
	c.Expires = microPtr(since.Add(waiterTTL))
	return c
}

func recordOf(holder Claim, waiters ...Claim) *Record {
	return &Record{Target: "staging", Policy: PolicyNewest, Holder: holder, Waiters: waiters, Updated: metav1.NewMicroTime(t0)}
}

// local marks c as a developer's claim, ordered by arrival only.
func local(c Claim) Claim {
	c.Unordered = true
	return c
}
func sessions(cs []Claim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ClaimID
	}
	return out
}

// queueOf returns a record held by h with n waiters w1…wn, queued in order.
func queueOf(n int) *Record {
	h := held(claim("h", "holder", "main", "1"), t0)
	var ws []Claim
	for i := range n {
		ws = append(ws, queued(local(claim(fmt.Sprintf("w%d", i+1), fmt.Sprintf("r%d", i+1), "main", "1")), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	rec := recordOf(h, ws...)
	rec.Policy = PolicyFIFO
	return rec
}

func now2() time.Time { return t0.Add(time.Minute) }

// lockConfigMap returns a lock ConfigMap whose record annotation is raw.
func lockConfigMap(raw string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   "locks",
			Name:        Name("staging"),
			Labels:      map[string]string{ManagedByLabel: ManagedByValue, KindLabel: KindValue},
			Annotations: map[string]string{RecordAnnotation: raw},
		},
	}
}
