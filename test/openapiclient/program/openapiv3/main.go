// Command openapiv3 drives a VM through a client generated from virt-api's
// /openapi/v3/apis/kubevirt.io/v1: the actions as subresources of kubevirt.io, with typed
// option bodies and typed answers (a Status with 202, a Status with each refusal). It creates a
// VM, starts it paused with StartOptions, unpauses its instance, migrates it with
// MigrateOptions and stops it with a grace period; the test plays the controller and the node.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	client "github.com/hangarvm/hangar/test/openapiclient/openapiv3"
	"github.com/hangarvm/hangar/test/openapiclient/program/internal/run"
)

func main() {
	if err := drive(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "openapiv3 program:", err)
		os.Exit(1)
	}
	fmt.Println("openapiv3 program: ok")
}

func ptr[T any](v T) *T { return &v }

type status = client.K8sIoApimachineryPkgApisMetaV1Status

// accepted checks a 202 carries its Status, as the kubevirt.io subresources answer.
func accepted(what string, code int, body []byte, s *status) error {
	if err := run.Expect(what, code, body, http.StatusAccepted); err != nil {
		return err
	}
	if s == nil || s.Code == nil || *s.Code != http.StatusAccepted || s.Status == nil || *s.Status != "Success" {
		return fmt.Errorf("%s: the 202 has no Status of success: %s", what, body)
	}
	return nil
}

// refused checks a refusal came as the Status the document promises.
func refused(what string, code int, body []byte, want int, s *status, reason string) error {
	if err := run.Expect(what, code, body, want); err != nil {
		return err
	}
	if s == nil || s.Reason == nil || *s.Reason != reason {
		return fmt.Errorf("%s: the %d has no Status with reason %s: %s", what, want, reason, body)
	}
	return nil
}

func drive(ctx context.Context) error {
	target, err := run.FromEnv()
	if err != nil {
		return err
	}
	c, err := client.NewClientWithResponses(target.URL, client.WithHTTPClient(target.HTTP), client.WithRequestEditorFn(target.Authorize))
	if err != nil {
		return err
	}
	ns, name := target.Namespace, target.Name

	// OpenAPI v3 says a quantity is a string or a number, as Kubernetes' own does.
	var memory client.K8sIoApimachineryPkgApiResourceQuantity
	if err := memory.FromK8sIoApimachineryPkgApiResourceQuantity0("128Mi"); err != nil {
		return err
	}
	vm := client.V1VirtualMachine{
		ApiVersion: ptr("kubevirt.io/v1"), Kind: ptr("VirtualMachine"),
		Metadata: &client.K8sIoApimachineryPkgApisMetaV1ObjectMeta{Name: ptr(name)},
		Spec: client.V1VirtualMachineSpec{
			RunStrategy: ptr("Halted"),
			Template: client.V1VirtualMachineInstanceTemplateSpec{Spec: &client.V1VirtualMachineInstanceSpec{
				Domain: client.V1DomainSpec{
					Resources: &client.V1ResourceRequirements{Requests: &map[string]client.K8sIoApimachineryPkgApiResourceQuantity{"memory": memory}},
					Devices:   client.V1Devices{Disks: &[]client.V1Disk{{Name: "root"}}},
				},
				Volumes: &[]client.V1Volume{{Name: "root", ContainerDisk: &client.V1ContainerDiskSource{Image: "example/disk"}}},
			}},
		},
	}
	created, err := c.CreateNamespacedVirtualMachineWithBodyWithResponse(ctx, ns,
		&client.CreateNamespacedVirtualMachineParams{FieldManager: ptr("openapiv3-program")}, "application/json", run.JSON(vm))
	if err != nil {
		return err
	}
	if err := run.Expect("create", created.StatusCode(), created.Body, http.StatusCreated); err != nil {
		return err
	}

	missing, err := c.ConnectPutNamespacedVirtualMachineStartWithResponse(ctx, ns, name+"-missing", client.V1StartOptions{})
	if err != nil {
		return err
	}
	if err := refused("start a missing VM", missing.StatusCode(), missing.Body, http.StatusNotFound, missing.JSON404, "NotFound"); err != nil {
		return err
	}
	dryRun, err := c.ConnectPutNamespacedVirtualMachineStartWithResponse(ctx, ns, name, client.V1StartOptions{Paused: ptr(true), DryRun: &[]string{"All"}})
	if err != nil {
		return err
	}
	if err := accepted("start, dry run", dryRun.StatusCode(), dryRun.Body, dryRun.JSON202); err != nil {
		return err
	}
	start, err := c.ConnectPutNamespacedVirtualMachineStartWithResponse(ctx, ns, name, client.V1StartOptions{Paused: ptr(true)})
	if err != nil {
		return err
	}
	if err := accepted("start paused", start.StatusCode(), start.Body, start.JSON202); err != nil {
		return err
	}
	paused := func(want bool) func() (bool, error) {
		return func() (bool, error) {
			vmi, err := c.ReadNamespacedVirtualMachineInstanceWithResponse(ctx, ns, name, nil)
			if err != nil || vmi.StatusCode() == http.StatusNotFound {
				return false, err
			}
			if vmi.JSON200 == nil || vmi.JSON200.Status == nil || vmi.JSON200.Status.Phase == nil || *vmi.JSON200.Status.Phase != "Running" {
				return false, nil
			}
			is := false
			if conditions := vmi.JSON200.Status.Conditions; conditions != nil {
				for _, cond := range *conditions {
					is = is || (cond.Type == "Paused" && cond.Status == "True")
				}
			}
			return is == want, nil
		}
	}
	if err := run.Wait(ctx, "the instance runs paused", paused(true)); err != nil {
		return err
	}
	again, err := c.ConnectPutNamespacedVirtualMachineStartWithResponse(ctx, ns, name, client.V1StartOptions{})
	if err != nil {
		return err
	}
	if err := refused("start a running VM", again.StatusCode(), again.Body, http.StatusConflict, again.JSON409, "Conflict"); err != nil {
		return err
	}

	var unpause *client.ConnectPutNamespacedVirtualMachineInstanceUnpauseResponse
	if _, err := run.Retry(ctx, "unpause", func() (int, error) {
		unpause, err = c.ConnectPutNamespacedVirtualMachineInstanceUnpauseWithResponse(ctx, ns, name, client.V1UnpauseOptions{})
		if err != nil {
			return 0, err
		}
		return unpause.StatusCode(), nil
	}); err != nil {
		return err
	}
	if err := accepted("unpause", unpause.StatusCode(), unpause.Body, unpause.JSON202); err != nil {
		return err
	}
	if err := run.Wait(ctx, "the instance runs unpaused", paused(false)); err != nil {
		return err
	}

	selector := map[string]string{"kubernetes.io/hostname": "node-b"}
	migrate, err := c.ConnectPutNamespacedVirtualMachineMigrateWithResponse(ctx, ns, name, client.V1MigrateOptions{AddedNodeSelector: &selector})
	if err != nil {
		return err
	}
	if err := accepted("migrate", migrate.StatusCode(), migrate.Body, migrate.JSON202); err != nil {
		return err
	}
	migrateAgain, err := c.ConnectPutNamespacedVirtualMachineMigrateWithResponse(ctx, ns, name, client.V1MigrateOptions{})
	if err != nil {
		return err
	}
	if migrateAgain.StatusCode() != http.StatusConflict && migrateAgain.StatusCode() != http.StatusUnprocessableEntity {
		return fmt.Errorf("migrate again: answered %d while a migration is under way: %s", migrateAgain.StatusCode(), migrateAgain.Body)
	}
	fmt.Printf("migrate again: %d\n", migrateAgain.StatusCode())
	migrations, err := c.ListNamespacedVirtualMachineInstanceMigrationWithResponse(ctx, ns, nil)
	if err != nil {
		return err
	}
	if err := run.Expect("list migrations", migrations.StatusCode(), migrations.Body, http.StatusOK); err != nil {
		return err
	}
	found := false
	for _, m := range migrations.JSON200.Items {
		found = found || (m.Spec.VmiName != nil && *m.Spec.VmiName == name && m.Spec.AddedNodeSelector != nil &&
			(*m.Spec.AddedNodeSelector)["kubernetes.io/hostname"] == "node-b")
	}
	if !found {
		return fmt.Errorf("no migration of %s to node-b: %s", name, migrations.Body)
	}

	stop, err := c.ConnectPutNamespacedVirtualMachineStopWithResponse(ctx, ns, name, client.V1StopOptions{GracePeriod: ptr(int64(5))})
	if err != nil {
		return err
	}
	if err := accepted("stop with a grace period", stop.StatusCode(), stop.Body, stop.JSON202); err != nil {
		return err
	}
	read, err := c.ReadNamespacedVirtualMachineWithResponse(ctx, ns, name, nil)
	if err != nil {
		return err
	}
	if read.JSON200 == nil || read.JSON200.Spec.RunStrategy == nil || *read.JSON200.Spec.RunStrategy != "Halted" {
		return fmt.Errorf("stop: the VM is not Halted: %s", read.Body)
	}
	vmi, err := c.ReadNamespacedVirtualMachineInstanceWithResponse(ctx, ns, name, nil)
	if err != nil {
		return err
	}
	if vmi.JSON200 == nil || vmi.JSON200.Spec.TerminationGracePeriodSeconds == nil || *vmi.JSON200.Spec.TerminationGracePeriodSeconds != 5 {
		return fmt.Errorf("stop: the instance's grace period is not 5 s: %s", vmi.Body)
	}
	stopAgain, err := c.ConnectPutNamespacedVirtualMachineStopWithResponse(ctx, ns, name, client.V1StopOptions{GracePeriod: ptr(int64(5))})
	if err != nil {
		return err
	}
	return refused("stop again, no shorter", stopAgain.StatusCode(), stopAgain.Body, http.StatusConflict, stopAgain.JSON409, "Conflict")
}
