// Command hangar-cluster runs the local Kubernetes of hack/cluster: several real nodes on one
// machine, each in network and mount namespaces of its own (package cluster has the model).
//
//	hangar-cluster up [--nodes N]      start (idempotent); HANGAR_NODES sets N too (default 1)
//	hangar-cluster down [--purge]      stop everything and restore the host
//	hangar-cluster import REF TARBALL  import an image tarball into every node
//	hangar-cluster nodes               print the nodes: name, address, pod network
//	hangar-cluster registry            print the registry's address and CA as shell assignments
//	                                   (HANGAR_REGISTRY=host:port, HANGAR_REGISTRY_CA=file)
//	hangar-cluster stop-kubelet NODE   stop a node's kubelet (a node failure; its pods run on)
//	hangar-cluster start-kubelet NODE  start it again
//
// hack/cluster/up.sh and down.sh build it and run it; run it as root.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hangarvm/hangar/hack/tools/internal/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func usage() error {
	return fmt.Errorf("usage: hangar-cluster up [--nodes N] | down [--purge] | import REF TARBALL | nodes | registry | stop-kubelet NODE | start-kubelet NODE")
}

func run(args []string) error {
	if len(args) == 0 {
		return usage()
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	nodes := fs.Int("nodes", 0, "number of nodes (default $HANGAR_NODES, else 1)")
	purge := fs.Bool("purge", false, "down: delete the cluster directory too (PKI, etcd, images)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes > 0 {
		os.Setenv("HANGAR_NODES", strconv.Itoa(*nodes))
	}
	s, err := cluster.FromEnv(root)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 && cmd != "nodes" && cmd != "registry" {
		return fmt.Errorf("hangar-cluster %s must run as root (it manages namespaces, containerd and mounts)", cmd)
	}
	switch cmd {
	case "up":
		return s.Up()
	case "down":
		return s.Down(*purge)
	case "import":
		if fs.NArg() != 2 {
			return usage()
		}
		return cluster.Step("image", "import "+fs.Arg(0), func() error { return s.ImportImage(fs.Arg(0), fs.Arg(1)) })
	case "stop-kubelet", "start-kubelet":
		if fs.NArg() != 1 {
			return usage()
		}
		if cmd == "stop-kubelet" {
			return cluster.Step("node", "stop kubelet of "+fs.Arg(0), func() error { return s.StopKubelet(fs.Arg(0)) })
		}
		return cluster.Step("node", "start kubelet of "+fs.Arg(0), func() error { return s.StartKubelet(fs.Arg(0)) })
	case "nodes":
		for _, n := range s.AllNodes() {
			fmt.Printf("%s\t%s\t%s\n", n.Name, n.IP, n.PodCIDR)
		}
		return nil
	case "registry":
		fmt.Print(s.RegistryEnv())
		return nil
	}
	return usage()
}

// repoRoot is the Hangar checkout: $HANGAR_REPO_ROOT, else found from the binary's place
// (<root>/_output/bin) or the working directory.
func repoRoot() (string, error) {
	if r := os.Getenv("HANGAR_REPO_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	if exe, err := os.Executable(); err == nil {
		root := filepath.Dir(filepath.Dir(filepath.Dir(exe)))
		if _, err := os.Stat(filepath.Join(root, "hack", "cluster")); err == nil {
			return root, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "hack", "cluster")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("cannot find the Hangar checkout; set HANGAR_REPO_ROOT")
}
