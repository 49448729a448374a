package instancetype

// The labels by which a volume's source (a PersistentVolumeClaim) names the instance type and
// preference a VM booting from it should have, as KubeVirt reads them for inferFromVolume. A
// missing kind label means the cluster-wide kind.
const (
	DefaultInstancetypeLabel     = GroupName + "/default-instancetype"
	DefaultInstancetypeKindLabel = GroupName + "/default-instancetype-kind"
	DefaultPreferenceLabel       = GroupName + "/default-preference"
	DefaultPreferenceKindLabel   = GroupName + "/default-preference-kind"
)
