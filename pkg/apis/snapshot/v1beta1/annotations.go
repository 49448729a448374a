package v1beta1

// RestoreCreatesTargetAnnotation is "true" on a VirtualMachineRestore whose target did not exist
// when it was created: virt-api checked its user's right to create the VirtualMachine, not to
// update one, so the restore controller only creates it and never rewrites a VirtualMachine of
// that name made meanwhile by someone else. virt-api sets or clears it at creation and keeps it
// on update, whatever the client sends.
const RestoreCreatesTargetAnnotation = "snapshot.hangarvm.io/creates-target"
