// Package identity finds who a lockctl command holds a lock as: the build
// named by identity flags, else by the CI system's environment, else by the
// local machine (user@host, the git checkout, the terminal session). Only
// the command line uses it; the lock package takes the identity it
// resolves and judges claims by its own rules.
package identity
