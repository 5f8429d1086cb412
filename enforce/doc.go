// Package enforce makes the API server itself enforce a deploy lock: a
// ValidatingAdmissionPolicy and its binding per target namespace (CEL run
// by the API server; no webhook, no CRD) that refuse writes of the guarded
// kinds in the target from anyone but the lock's holder, refuse them all
// while the lock is frozen except break-glass, and refuse writes of the
// lock's record that would make someone holder out of turn.
//
// The policy reads the lock's ConfigMap as its parameter. CEL has no JSON
// decoder and no clock, so it reads the flat summary every lockctl write
// of the record leaves beside it (lock.SummaryPrefix) and judges no
// expiry: a hold counts until lockctl replaces or releases it
// (docs/enforcement.md, docs/adr/0080-enforced-by-the-api-server.md).
//
// What it does not guarantee: anything that does not go through the API
// server (a database migration, a cloud console), kinds not guarded, and
// the moments after a lock changes hands before the API server's informer
// has seen the change (milliseconds).
package enforce
