// Command etcd is the upstream etcd server, built from go.etcd.io/etcd/server/v3
// at the version k8s.io/kubernetes pins. Debian's etcd-server (3.4) is too old:
// kube-apiserver turns off consistent reads from the watch cache with it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
