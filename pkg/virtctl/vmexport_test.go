package virtctl

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	"github.com/hangarvm/hangar/pkg/exportserver"
)

func TestExportSpec(t *testing.T) {
	o := vmExportOptions{pvc: "dump", ttl: time.Hour}
	e, err := o.exportSpec("ns", "x")
	require.NoError(t, err)
	assert.Equal(t, "PersistentVolumeClaim", e.Spec.Source.Kind)
	assert.Equal(t, ptr.To(""), e.Spec.Source.APIGroup)
	assert.Equal(t, time.Hour, e.Spec.TTLDuration.Duration)
	assert.Equal(t, "export.kubevirt.io/v1beta1", e.APIVersion)

	e, err = (&vmExportOptions{vm: "db"}).exportSpec("ns", "x")
	require.NoError(t, err)
	assert.Equal(t, ptr.To("kubevirt.io"), e.Spec.Source.APIGroup)
	assert.Nil(t, e.Spec.TTLDuration)

	e, err = (&vmExportOptions{}).exportSpec("ns", "x")
	require.NoError(t, err)
	assert.Nil(t, e, "no source: no export to create")
	_, err = (&vmExportOptions{vm: "db", pvc: "d"}).exportSpec("ns", "x")
	assert.ErrorContains(t, err, "only one of")
}

func TestPickURL(t *testing.T) {
	disk := exportv1beta1.VirtualMachineExportVolume{Name: "root", Formats: []exportv1beta1.VirtualMachineExportVolumeFormat{
		{Format: exportv1beta1.KubeVirtRaw, Url: "https://s/volumes/root/disk.img"}, {Format: exportv1beta1.KubeVirtGz, Url: "https://s/volumes/root/disk.img.gz"}}}
	files := exportv1beta1.VirtualMachineExportVolume{Name: "dump", Formats: []exportv1beta1.VirtualMachineExportVolumeFormat{
		{Format: exportv1beta1.Dir, Url: "https://s/volumes/dump/dir"}, {Format: exportv1beta1.ArchiveGz, Url: "https://s/volumes/dump/disk.tar.gz"}}}
	tests := []struct {
		name       string
		volumes    []exportv1beta1.VirtualMachineExportVolume
		volume     string
		url        string
		compressed bool
		err        string
	}{
		{"the only disk, gzip", []exportv1beta1.VirtualMachineExportVolume{disk}, "", "https://s/volumes/root/disk.img.gz", true, ""},
		{"a claim's files, tarball", []exportv1beta1.VirtualMachineExportVolume{files}, "dump", "https://s/volumes/dump/disk.tar.gz", true, ""},
		{"two volumes, none named", []exportv1beta1.VirtualMachineExportVolume{disk, files}, "", "", false, "name one with --volume"},
		{"an unknown volume", []exportv1beta1.VirtualMachineExportVolume{disk}, "data", "", false, "volume data is not in the export"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, compressed, err := pickURL(&exportv1beta1.VirtualMachineExportLink{Volumes: tt.volumes}, tt.volume, "gzip")
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.url, url)
			assert.Equal(t, tt.compressed, compressed)
		})
	}
}

// TestFetchExport: the token goes in KubeVirt's header, only the export's certificate is
// trusted, raw decompresses, and a refusal is an error with the server's words.
func TestFetchExport(t *testing.T) {
	payload := bytes.Repeat([]byte("disk-bytes "), 1000)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(exportserver.TokenName) != "secret-token" {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(payload)
		_ = zw.Close()
	}))
	defer srv.Close()
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	ctx := context.Background()

	var out bytes.Buffer
	_, err := fetchExport(ctx, srv.URL, "secret-token", certPEM, "example.com", false, true, &out)
	require.NoError(t, err)
	assert.Equal(t, payload, out.Bytes(), "raw: decompressed")

	out.Reset()
	_, err = fetchExport(ctx, srv.URL, "secret-token", certPEM, "example.com", false, false, &out)
	require.NoError(t, err)
	zr, err := gzip.NewReader(&out)
	require.NoError(t, err)
	var plain bytes.Buffer
	_, err = plain.ReadFrom(zr)
	require.NoError(t, err)
	assert.Equal(t, payload, plain.Bytes(), "gzip: kept compressed")

	_, err = fetchExport(ctx, srv.URL, "wrong", certPEM, "example.com", false, false, &out)
	assert.ErrorContains(t, err, "401")
	assert.ErrorContains(t, err, "bad token")

	_, err = fetchExport(ctx, srv.URL, "secret-token", certPEM, "virt-export-other.ns.svc", false, false, &out)
	assert.ErrorContains(t, err, "certificate", "a server that is not the export's Service is not trusted")
}
