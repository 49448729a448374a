// Command swagger drives a VM through a client generated from an OpenAPI v2 document, as a
// KubeVirt user's program does: it is written against the client generated from KubeVirt's own
// swagger.json, and builds against the one generated from virt-api's /openapi/v2 with nothing
// changed but the client package (here, the file the test puts in it).
//
// It creates a VM, starts it paused with StartOptions, unpauses its instance, migrates it with
// MigrateOptions, stops it with a grace period, labels it with a merge patch and deletes it,
// and checks every answer on the way, through subresources.kubevirt.io as KubeVirt's clients
// do. The test plays the controller and the node.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/hangarvm/hangar/test/openapiclient/program/internal/run"
	client "github.com/hangarvm/hangar/test/openapiclient/swagger"
)

func main() {
	if err := drive(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "swagger program:", err)
		os.Exit(1)
	}
	fmt.Println("swagger program: ok")
}

func ptr[T any](v T) *T { return &v }

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
	const asJSON = "application/json"

	vm := client.V1VirtualMachine{
		ApiVersion: ptr("kubevirt.io/v1"), Kind: ptr("VirtualMachine"),
		Metadata: &client.K8sIoApimachineryPkgApisMetaV1ObjectMeta{Name: ptr(name)},
		Spec: client.V1VirtualMachineSpec{
			RunStrategy: ptr("Halted"),
			Template: client.V1VirtualMachineInstanceTemplateSpec{Spec: &client.V1VirtualMachineInstanceSpec{
				Domain: client.V1DomainSpec{
					Resources: &client.V1ResourceRequirements{Requests: &map[string]client.K8sIoApimachineryPkgApiResourceQuantity{"memory": "128Mi"}},
					Devices:   client.V1Devices{Disks: &[]client.V1Disk{{Name: "root"}}},
				},
				Volumes: &[]client.V1Volume{{Name: "root", ContainerDisk: &client.V1ContainerDiskSource{Image: "example/disk"}}},
			}},
		},
	}
	created, err := c.CreateNamespacedVirtualMachineWithResponse(ctx, ns, vm)
	if err != nil {
		return err
	}
	if err := run.Expect("create", created.StatusCode(), created.Body, http.StatusCreated); err != nil {
		return err
	}
	if created.JSON201 == nil || created.JSON201.Spec.RunStrategy == nil || *created.JSON201.Spec.RunStrategy != "Halted" {
		return fmt.Errorf("create: the answer is not the VM: %s", created.Body)
	}

	start, err := c.V1StartWithBodyWithResponse(ctx, ns, name, asJSON, run.JSON(client.V1StartOptions{Paused: ptr(true)}))
	if err != nil {
		return err
	}
	if err := run.Expect("start paused", start.StatusCode(), start.Body, http.StatusAccepted); err != nil {
		return err
	}
	if len(start.Body) != 0 {
		return fmt.Errorf("start: KubeVirt answers 202 with no body, got %s", start.Body)
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
	again, err := c.V1StartWithBodyWithResponse(ctx, ns, name, asJSON, run.JSON(client.V1StartOptions{}))
	if err != nil {
		return err
	}
	if err := run.Expect("start a running VM", again.StatusCode(), again.Body, http.StatusConflict); err != nil {
		return err
	}

	code, err := run.Retry(ctx, "unpause", func() (int, error) {
		r, err := c.V1UnpauseWithBodyWithResponse(ctx, ns, name, asJSON, run.JSON(client.V1UnpauseOptions{}))
		if err != nil {
			return 0, err
		}
		return r.StatusCode(), nil
	})
	if err != nil {
		return err
	}
	if err := run.Expect("unpause", code, nil, http.StatusAccepted); err != nil {
		return err
	}
	if err := run.Wait(ctx, "the instance runs unpaused", paused(false)); err != nil {
		return err
	}

	selector := map[string]string{"kubernetes.io/hostname": "node-b"}
	migrate, err := c.V1MigrateWithBodyWithResponse(ctx, ns, name, asJSON, run.JSON(client.V1MigrateOptions{AddedNodeSelector: &selector}))
	if err != nil {
		return err
	}
	if err := run.Expect("migrate", migrate.StatusCode(), migrate.Body, http.StatusAccepted); err != nil {
		return err
	}
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

	stop, err := c.V1StopWithBodyWithResponse(ctx, ns, name, asJSON, run.JSON(client.V1StopOptions{GracePeriod: ptr(int64(5))}))
	if err != nil {
		return err
	}
	if err := run.Expect("stop with a grace period", stop.StatusCode(), stop.Body, http.StatusAccepted); err != nil {
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
	stopAgain, err := c.V1StopWithBodyWithResponse(ctx, ns, name, asJSON, run.JSON(client.V1StopOptions{GracePeriod: ptr(int64(5))}))
	if err != nil {
		return err
	}
	if err := run.Expect("stop again, no shorter", stopAgain.StatusCode(), stopAgain.Body, http.StatusConflict); err != nil {
		return err
	}

	labels := map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]string{"app": "demo"}}}
	patched, err := c.PatchNamespacedVirtualMachineWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, ns, name, labels)
	if err != nil {
		return err
	}
	if err := run.Expect("label with a merge patch", patched.StatusCode(), patched.Body, http.StatusOK); err != nil {
		return err
	}
	if patched.JSON200 == nil || patched.JSON200.Metadata == nil || patched.JSON200.Metadata.Labels == nil || (*patched.JSON200.Metadata.Labels)["app"] != "demo" {
		return fmt.Errorf("patch: the answer is not the labelled VM: %s", patched.Body)
	}
	deleted, err := c.DeleteNamespacedVirtualMachineWithResponse(ctx, ns, name, nil,
		client.K8sIoApimachineryPkgApisMetaV1DeleteOptions{PropagationPolicy: ptr("Background")})
	if err != nil {
		return err
	}
	if err := run.Expect("delete", deleted.StatusCode(), deleted.Body, http.StatusOK); err != nil {
		return err
	}
	if deleted.JSON200 == nil || deleted.JSON200.Status == nil || *deleted.JSON200.Status != "Success" {
		return fmt.Errorf("delete: the answer is not a Status of success: %s", deleted.Body)
	}
	return run.Wait(ctx, "the VM is gone", func() (bool, error) {
		read, err := c.ReadNamespacedVirtualMachineWithResponse(ctx, ns, name, nil)
		if err != nil {
			return false, err
		}
		return read.StatusCode() == http.StatusNotFound, nil
	})
}
