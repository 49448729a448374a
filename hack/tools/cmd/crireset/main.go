// Command crireset stops and removes every pod sandbox (and so every
// container) known to a CRI runtime. cluster-down runs it after kubelet has
// stopped: going through CRI, rather than killing processes, lets containerd
// run the CNI DEL for each pod, which releases its IP, removes its veth and
// portmap rules and unmounts its network namespace. Debian 12 ships no crictl.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	criclient "k8s.io/cri-client/pkg"
)

func main() {
	endpoint := flag.String("endpoint", "", "CRI endpoint, e.g. unix:///path/containerd.sock (required)")
	timeout := flag.Duration("timeout", 2*time.Minute, "overall time limit")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "crireset: -endpoint is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := resetRuntime(ctx, *endpoint); err != nil {
		fmt.Fprintln(os.Stderr, "crireset:", err)
		os.Exit(1)
	}
}

func resetRuntime(ctx context.Context, endpoint string) error {
	runtime, err := criclient.NewRemoteRuntimeService(endpoint, 10*time.Second, noop.NewTracerProvider(), nil)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	sandboxes, err := runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var failed int
	for _, sb := range sandboxes {
		name := sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()
		// Stopping first tears the network down; removal then deletes the
		// sandbox's containers and its on-disk state.
		if err := runtime.StopPodSandbox(ctx, sb.Id); err != nil {
			fmt.Fprintf(os.Stderr, "stop pod sandbox %s (%s): %v\n", name, sb.Id, err)
			failed++
			continue
		}
		if err := runtime.RemovePodSandbox(ctx, sb.Id); err != nil {
			fmt.Fprintf(os.Stderr, "remove pod sandbox %s (%s): %v\n", name, sb.Id, err)
			failed++
			continue
		}
		fmt.Printf("removed pod sandbox %s\n", name)
	}
	// Containers whose sandbox is already gone would otherwise stay behind.
	containers, err := runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, c := range containers {
		_ = runtime.StopContainer(ctx, c.Id, 0)
		if err := runtime.RemoveContainer(ctx, c.Id); err != nil {
			fmt.Fprintf(os.Stderr, "remove container %s: %v\n", c.Id, err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d pod sandboxes or containers could not be removed", failed)
	}
	return nil
}
