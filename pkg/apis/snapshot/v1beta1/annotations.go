package v1beta1

// RestoreCreatesTargetAnnotation records what virt-api checked of a VirtualMachineRestore's
// user at its creation: "true" when the target did not exist (the right to create the
// VirtualMachine), "false" when it did (the right to update it). The restore controller does
// only that: a "true" restore never rewrites a VirtualMachine of that name made meanwhile by
// someone else, a "false" one never makes a VirtualMachine deleted meanwhile again. virt-api
// sets it at creation and keeps it on update, whatever the client sends; a restore without it
// (made before Hangar recorded it) is not held to either.
const RestoreCreatesTargetAnnotation = "snapshot.hangarvm.io/creates-target"
