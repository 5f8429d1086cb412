// Command etcd builds the etcd server from its Go module, at the version
// kube-apiserver itself requires, for the integration test harness.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
