package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// controllerManagerControllers are the kube-controller-manager loops Hangar relies on: RBAC
// role aggregation (view/edit/admin gain Hangar's rights), garbage collection across the
// aggregated API (a VM's instance goes with it), namespaces, service accounts, and the quota
// controller, which computes the usage of count/<resource>.kubevirt.io quotas.
var controllerManagerControllers = "clusterrole-aggregation-controller,garbage-collector-controller,namespace-controller," +
	"serviceaccount-controller,serviceaccount-token-controller,resourcequota-controller"

// StartControllerManager runs kube-controller-manager (the loops above) against s until Stop.
func (s *KubeAPIServer) StartControllerManager() error {
	binary, err := BinaryPath("kube-controller-manager")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(s.Dir, "controller-manager.kubeconfig")
	if err := WriteKubeconfig(s.Admin, kubeconfig); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(s.Dir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--controllers="+controllerManagerControllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(s.Dir, "sa.key"),
		"--root-ca-file="+s.CA.CertFile,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	s.stopControllerManager = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return nil
}
