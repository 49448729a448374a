package validation_test

// Seeds for the fuzz targets: realistic objects, each exercising a different part of the
// spec, so mutations start from inputs that validation accepts.

var instanceSeeds = []string{
	// The smallest guest: memory only; defaulting adds a masquerade interface.
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"tiny","namespace":"ns"},
	 "spec":{"domain":{"resources":{"requests":{"memory":"64Mi"}},"devices":{}}}}`,
	// A cloud image with cloud-init, a scratch disk, a pinned MAC, ports and a boot order.
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"fedora","namespace":"ns","labels":{"app":"web"}},
	 "spec":{"domain":{"cpu":{"cores":2,"sockets":1,"threads":1},"memory":{"guest":"1Gi"},
	   "resources":{"requests":{"memory":"1Gi","cpu":"500m"},"limits":{"memory":"2Gi","cpu":"2"}},
	   "devices":{"disks":[{"name":"root","bootOrder":1,"disk":{"bus":"virtio"},"serial":"root-1"},{"name":"seed","cdrom":{"bus":"sata"}},{"name":"scratch","disk":{"bus":"scsi"}}],
	     "interfaces":[{"name":"default","model":"virtio","masquerade":{},"macAddress":"02:00:00:00:00:01","ports":[{"name":"ssh","port":22},{"port":53,"protocol":"UDP"}]}],
	     "rng":{}}},
	   "volumes":[{"name":"root","containerDisk":{"image":"quay.io/containerdisks/fedora:40","imagePullPolicy":"IfNotPresent","imagePullSecret":"regcred"}},
	     {"name":"seed","cloudInitNoCloud":{"userData":"#cloud-config\npassword: fedora\n"}},
	     {"name":"scratch","emptyDisk":{"capacity":"2Gi"}}],
	   "networks":[{"name":"default","pod":{"vmNetworkCIDR":"10.11.12.0/24"}}],
	   "terminationGracePeriodSeconds":60,"hostname":"web-1","subdomain":"web"}}`,
	// Direct kernel boot, as the demo VM.
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"demo","namespace":"ns"},
	 "spec":{"domain":{"cpu":{"cores":1},"resources":{"requests":{"memory":"128Mi"}},
	   "firmware":{"uuid":"5d307ca9-b3ef-428c-8861-06e72d69f223","serial":"demo-1","kernelBoot":{"kernelArgs":"console=ttyS0 quiet",
	     "container":{"image":"hangar.local/kernelboot-guest:dev","imagePullPolicy":"Never","kernelPath":"/boot/vmlinux","initrdPath":"/boot/initramfs.cpio.gz"}}},
	   "machine":{"type":"pc-q35-7.2"},"features":{"acpi":{"enabled":false}},"devices":{"autoattachGraphicsDevice":false}},
	   "terminationGracePeriodSeconds":10,"startStrategy":"Paused"}}`,
	// Claims, a bridge binding, scheduling constraints.
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"db","namespace":"ns"},
	 "spec":{"domain":{"resources":{"requests":{"memory":"4Gi"},"overcommitGuestOverhead":true},
	   "devices":{"disks":[{"name":"data","disk":{"bus":"sata","readOnly":false}},{"name":"iso","cdrom":{"bus":"usb"},"bootOrder":2}],
	     "interfaces":[{"name":"lan","bridge":{},"bootOrder":3}]}},
	   "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"db-data"}},{"name":"iso","persistentVolumeClaim":{"claimName":"install-iso","readOnly":true}}],
	   "networks":[{"name":"lan","pod":{}}],
	   "nodeSelector":{"disk":"ssd"},"schedulerName":"my-scheduler","priorityClassName":"high","evictionStrategy":"None",
	   "tolerations":[{"key":"dedicated","operator":"Equal","value":"vms","effect":"NoExecute","tolerationSeconds":30},{"operator":"Exists"}],
	   "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}]}]}},
	     "podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":50,"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"kubernetes.io/hostname"}}]}}}}`,
	// KubeVirt's Windows example: EFI Secure Boot with SMM, a TPM, Hyper-V, the Windows clock,
	// a tablet, CPU features, multi-queue and transitional virtio.
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"win","namespace":"ns"},
	 "spec":{"domain":{"clock":{"timer":{"hpet":{"present":false},"hyperv":{},"kvm":{},"pit":{"tickPolicy":"delay"},"rtc":{"tickPolicy":"catchup","track":"guest"}},"utc":{"offsetSeconds":60}},
	   "cpu":{"cores":2,"features":[{"name":"pcid"},{"name":"svm","policy":"disable"}]},
	   "devices":{"interfaces":[{"masquerade":{},"model":"e1000","name":"default"}],"tpm":{"persistent":true},"inputs":[{"name":"tablet","bus":"virtio"}],
	     "useVirtioTransitional":true,"blockMultiQueue":true,"networkInterfaceMultiqueue":true,"autoattachInputDevice":true},
	   "features":{"acpi":{},"apic":{"endOfInterrupt":true},"kvm":{"hidden":true},"pvspinlock":{},"hyperv":{"relaxed":{},"spinlocks":{"spinlocks":8191},"vapic":{},"synictimer":{"direct":{}},
	     "tlbflush":{"direct":{},"extended":{}},"ipi":{},"reset":{},"runtime":{},"frequencies":{},"reenlightenment":{},"vendorid":{"vendorid":"hangar"},"evmcs":{}},"smm":{}},
	   "firmware":{"bootloader":{"efi":{"secureBoot":true,"persistent":true}},"uuid":"5d307ca9-b3ef-428c-8861-06e72d69f223"},
	   "memory":{"guest":"2Gi"},"resources":{}},
	   "networks":[{"name":"default","pod":{}}],"terminationGracePeriodSeconds":0,
	   "volumes":[{"name":"pvcdisk","persistentVolumeClaim":{"claimName":"disk-windows"}}]}}`,
}

var templateSeeds = []string{
	// artifacts/examples/demo-vm.yaml.
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"demo","namespace":"ns","labels":{"app":"demo"}},
	 "spec":{"runStrategy":"Always","template":{"metadata":{"labels":{"app":"demo"}},"spec":{"domain":{"cpu":{"cores":1},"resources":{"requests":{"memory":"128Mi"}},
	   "firmware":{"kernelBoot":{"kernelArgs":"console=ttyS0 quiet no_timer_check hostname=demo","container":{"image":"hangar.local/kernelboot-guest:dev",
	     "imagePullPolicy":"Never","kernelPath":"/boot/vmlinux","initrdPath":"/boot/initramfs.cpio.gz"}}},"devices":{}},"terminationGracePeriodSeconds":10}}}}`,
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"cirros","namespace":"ns"},
	 "spec":{"running":false,"template":{"spec":{"domain":{"resources":{"requests":{"memory":"64M"}},"devices":{"disks":[{"name":"root","disk":{}}]}},
	   "volumes":[{"name":"root","containerDisk":{"image":"quay.io/kubevirt/cirros-container-disk-demo"}},{"name":"cloudinit","cloudInitNoCloud":{"userDataBase64":"I2Nsb3VkLWNvbmZpZwo="}}]}}}}`,
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceReplicaSet","metadata":{"name":"web","namespace":"ns"},
	 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
	   "spec":{"domain":{"resources":{"requests":{"memory":"256Mi","cpu":"1"},"limits":{"cpu":"1"}},"devices":{"interfaces":[{"name":"default","masquerade":{},"ports":[{"port":80}]}]}},
	     "networks":[{"name":"default","pod":{}}],"volumes":[{"name":"root","containerDisk":{"image":"example/web:1","path":"/disk/web.qcow2"}}]}}}}`,
}
