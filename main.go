// Command lockctl deploys safely to Kubernetes: a namespace deploy lock, job
// pods, and the reconcile loop that drives them.
package main

import (
	"os"

	"github.com/lockctl/lockctl/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
