package cloudinit

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/hangarvm/hangar/pkg/apis/kubevirt/v1"
)

// readRoot parses an image back: the label and root files of the primary (kind 1) or Joliet
// (kind 2) tree, following the volume descriptor, root record and directory records.
func readRoot(t *testing.T, img []byte, kind byte) (string, map[string]string) {
	t.Helper()
	for s := 16; ; s++ {
		require.Less(t, (s+1)*sectorSize, len(img)+1, "no volume descriptor of kind %d", kind)
		vd := img[s*sectorSize : (s+1)*sectorSize]
		require.Equal(t, "CD001", string(vd[1:6]))
		require.NotEqual(t, byte(255), vd[0], "no volume descriptor of kind %d", kind)
		if vd[0] != kind {
			continue
		}
		decode := func(b []byte) string {
			if kind == 1 {
				return strings.TrimRight(string(b), " ")
			}
			u := make([]uint16, len(b)/2)
			for i := range u {
				u[i] = binary.BigEndian.Uint16(b[2*i:])
			}
			return strings.TrimRight(string(utf16.Decode(u)), " ")
		}
		require.Equal(t, uint32(len(img)/sectorSize), binary.LittleEndian.Uint32(vd[80:]), "volume space size")
		require.Equal(t, binary.LittleEndian.Uint32(vd[80:]), binary.BigEndian.Uint32(vd[84:]))
		root := vd[156:190]
		extent := binary.LittleEndian.Uint32(root[2:])
		size := binary.LittleEndian.Uint32(root[10:])
		dir := img[int(extent)*sectorSize : int(extent)*sectorSize+int(size)]
		files := map[string]string{}
		for off := 0; off < len(dir) && dir[off] != 0; off += int(dir[off]) {
			r := dir[off : off+int(dir[off])]
			id := r[33 : 33+int(r[32])]
			if r[25]&2 != 0 {
				continue // . and ..
			}
			ext, n := binary.LittleEndian.Uint32(r[2:]), binary.LittleEndian.Uint32(r[10:])
			require.Equal(t, ext, binary.BigEndian.Uint32(r[6:]))
			files[decode(id)] = string(img[int(ext)*sectorSize : int(ext)*sectorSize+int(n)])
		}
		return decode(vd[40:72]), files
	}
}

func testNoCloud() NoCloud {
	return NoCloud{
		UserData:      []byte("#cloud-config\nhostname: guest\n" + strings.Repeat("# padding\n", 300)),
		MetaData:      MetaData("guest.ns", "guest"),
		NetworkConfig: []byte("version: 2\n"),
	}
}

func TestWriteISOReadsBack(t *testing.T) {
	var buf bytes.Buffer
	nc := testNoCloud()
	require.NoError(t, WriteISO(&buf, Label, nc.Files(), time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)))
	img := buf.Bytes()
	require.Zero(t, len(img)%sectorSize)

	label, files := readRoot(t, img, 2)
	assert.Equal(t, "cidata", label)
	assert.Equal(t, map[string]string{
		"user-data": string(nc.UserData), "meta-data": string(nc.MetaData), "network-config": string(nc.NetworkConfig),
	}, files)

	label, files = readRoot(t, img, 1)
	assert.Equal(t, "cidata", label)
	assert.Equal(t, string(nc.UserData), files["USER_DATA.;1"])
	assert.Equal(t, string(nc.MetaData), files["META_DATA.;1"])
	assert.Len(t, files, 3)
}

func TestWriteISOEmptyFileAndErrors(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteISO(&buf, Label, []File{{Name: "user-data"}, {Name: "meta-data", Data: []byte("x")}}, time.Now()))
	_, files := readRoot(t, buf.Bytes(), 2)
	assert.Equal(t, map[string]string{"user-data": "", "meta-data": "x"}, files)

	assert.Error(t, WriteISO(&buf, "a-label-much-too-long", nil, time.Now()))
	assert.Error(t, WriteISO(&buf, Label, []File{{Name: "a/b"}}, time.Now()))
	assert.Error(t, WriteISO(&buf, Label, []File{{Name: "x"}, {Name: "x"}}, time.Now()))
	assert.ErrorContains(t, WriteISO(&buf, Label, []File{{Name: "a-b"}, {Name: "a_b"}}, time.Now()), "same ISO 9660 name")
}

func TestForVolume(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guest"}}
	nc, err := ForVolume(vmi, &v1.CloudInitNoCloudSource{UserDataBase64: "I2Nsb3VkLWNvbmZpZwo=", NetworkData: "version: 2\n"}, "")
	require.NoError(t, err)
	assert.Equal(t, "#cloud-config\n", string(nc.UserData))
	assert.Equal(t, "instance-id: guest.ns\nlocal-hostname: guest\n", string(nc.MetaData))
	assert.Equal(t, "version: 2\n", string(nc.NetworkConfig))

	vmi.Spec.Hostname = "other"
	nc, err = ForVolume(vmi, &v1.CloudInitNoCloudSource{UserData: "x"}, "")
	require.NoError(t, err)
	assert.Contains(t, string(nc.MetaData), "local-hostname: other\n")
	assert.Nil(t, nc.NetworkConfig)
	assert.Len(t, nc.Files(), 2)

	_, err = ForVolume(vmi, &v1.CloudInitNoCloudSource{UserDataBase64: "!!"}, "")
	assert.ErrorContains(t, err, "user data: base64")
}

// TestISOInfo reads the image with genisoimage's isoinfo, an independent reader, when it is
// installed (hack/install-node-deps.sh installs it).
func TestISOInfo(t *testing.T) {
	isoinfo, err := exec.LookPath("isoinfo")
	if err != nil {
		t.Skip("isoinfo not installed")
	}
	path := filepath.Join(t.TempDir(), "seed.iso")
	nc := testNoCloud()
	require.NoError(t, nc.WriteFile(path))

	out, err := exec.Command(isoinfo, "-d", "-i", path).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "Volume id: cidata")
	assert.Contains(t, string(out), "Joliet with UCS level 3 found")

	out, err = exec.Command(isoinfo, "-J", "-f", "-i", path).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.ElementsMatch(t, []string{"/meta-data", "/network-config", "/user-data"}, strings.Fields(string(out)))

	for name, want := range map[string][]byte{"/user-data": nc.UserData, "/meta-data": nc.MetaData, "/network-config": nc.NetworkConfig} {
		got, err := exec.Command(isoinfo, "-J", "-x", name, "-i", path).Output()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), name)
	}
	_, err = os.Stat(path + ".tmp")
	assert.True(t, os.IsNotExist(err))
}
