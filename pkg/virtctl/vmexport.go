package virtctl

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"

	exportv1beta1 "github.com/hangarvm/hangar/pkg/apis/export/v1beta1"
	"github.com/hangarvm/hangar/pkg/exportserver"
	exportclient "github.com/hangarvm/hangar/pkg/generated/export/clientset/versioned"
)

// vmexport, flag for flag as KubeVirt's virtctl: create makes a VirtualMachineExport of a VM or
// a claim, delete removes it, download fetches one of its volumes (creating the export first
// when --vm or --pvc is given, and deleting it afterwards unless --keep-vme), through the
// export's Service or, with --port-forward, a port-forward to its server pod.

type vmExportOptions struct {
	vm, pvc, snapshot string
	ttl               time.Duration
	output, volume    string
	format, localPort string
	portForward, keep bool
	insecure          bool
	readyTimeout      time.Duration
}

func newVMExportCommand(c *cliContext) *cobra.Command {
	o := vmExportOptions{}
	cmd := &cobra.Command{
		Use:   "vmexport create|delete|download NAME",
		Short: "Export a VM's or a claim's volumes for download",
		Example: `  # Export the stopped VM db's disks, and download its root disk, raw, through a port-forward:
  virtctl vmexport create db-export --vm=db
  virtctl vmexport download db-export --volume=root --format=raw --output=root.img --port-forward
  # Export a claim and download it in one go (the export is deleted afterwards):
  virtctl vmexport download dump-export --pvc=dump --output=dump.tar.gz --port-forward
  virtctl vmexport delete db-export`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			function, name := args[0], args[1]
			exports, ns, err := c.exportClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			switch function {
			case "create":
				if err := o.create(ctx, exports, ns, name); err != nil {
					return err
				}
				fmt.Fprintf(c.streams.Out, "VirtualMachineExport '%s/%s' created succesfully\n", ns, name)
			case "delete":
				if err := exports.ExportV1beta1().VirtualMachineExports(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					if !apierrors.IsNotFound(err) {
						return err
					}
					fmt.Fprintf(c.streams.Out, "VirtualMachineExport '%s/%s' does not exist\n", ns, name)
					return nil
				}
				fmt.Fprintf(c.streams.Out, "VirtualMachineExport '%s/%s' deleted succesfully\n", ns, name)
			case "download":
				kube, _, err := c.kube()
				if err != nil {
					return err
				}
				return o.download(ctx, c, exports, kube, ns, name)
			default:
				return fmt.Errorf("invalid function '%s'", function)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.vm, "vm", "", "the VirtualMachine to export (create, or download creating the export)")
	f.StringVar(&o.pvc, "pvc", "", "the PersistentVolumeClaim to export")
	f.StringVar(&o.snapshot, "snapshot", "", "the VirtualMachineSnapshot to export (not served by Hangar yet)")
	f.DurationVar(&o.ttl, "ttl", 0, "how long the export lives (2h when unset)")
	f.StringVar(&o.output, "output", "", "the file the volume is downloaded to (download)")
	f.StringVar(&o.volume, "volume", "", "the volume to download, when the export has several")
	f.StringVar(&o.format, "format", "gzip", "gzip or raw: raw decompresses the download")
	f.BoolVar(&o.portForward, "port-forward", false, "download through a port-forward to the export server, not its Service")
	f.StringVar(&o.localPort, "local-port", "0", "the port-forward's local port (0: any free one)")
	f.BoolVar(&o.keep, "keep-vme", false, "keep the export a download created")
	f.BoolVar(&o.insecure, "insecure", false, "do not verify the export server's certificate")
	f.DurationVar(&o.readyTimeout, "retry", 2*time.Minute, "how long to wait for the export to be ready")
	return cmd
}

// exportSpec is the export the flags ask for, nil when they name no source.
func (o *vmExportOptions) exportSpec(ns, name string) (*exportv1beta1.VirtualMachineExport, error) {
	var source corev1.TypedLocalObjectReference
	set := 0
	if o.vm != "" {
		source, set = corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: o.vm}, set+1
	}
	if o.pvc != "" {
		source, set = corev1.TypedLocalObjectReference{APIGroup: ptr.To(""), Kind: "PersistentVolumeClaim", Name: o.pvc}, set+1
	}
	if o.snapshot != "" {
		source, set = corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: o.snapshot}, set+1
	}
	switch set {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("only one of --vm, --snapshot or --pvc may be given")
	}
	e := &exportv1beta1.VirtualMachineExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: exportv1beta1.SchemeGroupVersion.String(), Kind: exportv1beta1.KindExport},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       exportv1beta1.VirtualMachineExportSpec{Source: source},
	}
	if o.ttl != 0 {
		e.Spec.TTLDuration = &metav1.Duration{Duration: o.ttl}
	}
	return e, nil
}

func (o *vmExportOptions) create(ctx context.Context, exports exportclient.Interface, ns, name string) error {
	e, err := o.exportSpec(ns, name)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("one of --vm, --snapshot or --pvc is needed")
	}
	_, err = exports.ExportV1beta1().VirtualMachineExports(ns).Create(ctx, e, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("VirtualMachineExport '%s/%s' already exists", ns, name)
	}
	return err
}

func (o *vmExportOptions) download(ctx context.Context, c *cliContext, exports exportclient.Interface, kube kubernetes.Interface, ns, name string) error {
	return o.downloadWith(ctx, c, exports, kube, ns, name, func(link *exportv1beta1.VirtualMachineExportLink) (string, bool, error) {
		return pickURL(link, o.volume, o.format)
	}, false)
}

// urlPicker chooses the URL to download from the export's link, and says whether it is gzip.
type urlPicker func(*exportv1beta1.VirtualMachineExportLink) (string, bool, error)

// downloadWith downloads what pick chooses of the export name (created first when the flags
// name a source) to o.output: decompressed when o.format is raw, compressed when gzipOut.
func (o *vmExportOptions) downloadWith(ctx context.Context, c *cliContext, exports exportclient.Interface, kube kubernetes.Interface, ns, name string, pick urlPicker, gzipOut bool) error {
	if o.output == "" {
		return fmt.Errorf("warning: Virtual Machine Export '%s/%s' requires an output file (--output)", ns, name)
	}
	if o.format != "gzip" && o.format != "raw" {
		return fmt.Errorf("supported formats are gzip and raw, not %q", o.format)
	}
	client := exports.ExportV1beta1().VirtualMachineExports(ns)
	if e, err := o.exportSpec(ns, name); err != nil {
		return err
	} else if e != nil {
		if _, err := client.Create(ctx, e, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if !o.keep {
			defer func() {
				if err := client.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}); err == nil {
					fmt.Fprintf(c.streams.Out, "VirtualMachineExport '%s/%s' deleted succesfully\n", ns, name)
				}
			}()
		}
	}
	fmt.Fprintf(c.streams.Out, "waiting for VM Export %s status to be ready...\n", name)
	var e *exportv1beta1.VirtualMachineExport
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.readyTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		e, err = client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return e.Status.Phase == exportv1beta1.Ready && e.Status.Links != nil && e.Status.Links.Internal != nil && e.Status.TokenSecretRef != nil, nil
	})
	if err != nil {
		return fmt.Errorf("VirtualMachineExport %s/%s is not ready: %w", ns, name, err)
	}
	link := e.Status.Links.Internal
	target, compressed, err := pick(link)
	if err != nil {
		return err
	}
	secret, err := kube.CoreV1().Secrets(ns).Get(ctx, *e.Status.TokenSecretRef, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the export's token: %w", err)
	}
	token := strings.TrimSpace(string(secret.Data["token"]))
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	serverName := u.Hostname()
	if o.portForward {
		local, stop, err := forwardToService(ctx, c, kube, ns, e.Status.ServiceName, o.localPort)
		if err != nil {
			return err
		}
		defer close(stop)
		u.Host = local
	}
	out, err := os.Create(o.output)
	if err != nil {
		return err
	}
	defer out.Close()
	fmt.Fprintf(c.streams.Out, "Downloading file: %s\n", o.output)
	var dst io.Writer = out
	var zw *gzip.Writer
	if gzipOut {
		zw = gzip.NewWriter(out)
		dst = zw
	}
	n, err := fetchExport(ctx, u.String(), token, link.Cert, serverName, o.insecure, compressed && o.format == "raw", dst)
	if err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	fmt.Fprintf(c.streams.Out, "Download finished succesfully (%d bytes)\n", n)
	return nil
}

// pickURL is the URL of volume (or the only volume) in format: a disk's gzip URL unless raw
// is asked for (downloaded compressed and decompressed, as KubeVirt's virtctl does); any other
// claim's tarball. compressed says whether the URL serves gzip.
func pickURL(link *exportv1beta1.VirtualMachineExportLink, volume, format string) (string, bool, error) {
	var vol *exportv1beta1.VirtualMachineExportVolume
	var names []string
	for i := range link.Volumes {
		names = append(names, link.Volumes[i].Name)
		if volume == link.Volumes[i].Name || (volume == "" && len(link.Volumes) == 1) {
			vol = &link.Volumes[i]
		}
	}
	if vol == nil {
		if volume == "" {
			return "", false, fmt.Errorf("the export has %d volumes (%s): name one with --volume", len(names), strings.Join(names, ", "))
		}
		return "", false, fmt.Errorf("volume %s is not in the export (it has %s)", volume, strings.Join(names, ", "))
	}
	byFormat := map[exportv1beta1.ExportVolumeFormat]string{}
	for _, f := range vol.Formats {
		byFormat[f.Format] = f.Url
	}
	for _, f := range []exportv1beta1.ExportVolumeFormat{exportv1beta1.KubeVirtGz, exportv1beta1.ArchiveGz} {
		if u, ok := byFormat[f]; ok {
			return u, true, nil
		}
	}
	if u, ok := byFormat[exportv1beta1.KubeVirtRaw]; ok {
		return u, false, nil
	}
	return "", false, fmt.Errorf("volume %s has no downloadable format", vol.Name)
}

// fetchExport downloads target into out with the token, trusting only the export's certificate
// for serverName (the Service's name, also through a port-forward); gunzip decompresses.
func fetchExport(ctx context.Context, target, token, certPEM, serverName string, insecure, gunzip bool, out io.Writer) (int64, error) {
	roots := x509.NewCertPool()
	if !insecure && !roots.AppendCertsFromPEM([]byte(certPEM)) {
		return 0, fmt.Errorf("the export's certificate is not PEM")
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12,
		InsecureSkipVerify: insecure}} //nolint:gosec // only with --insecure, as KubeVirt's virtctl
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(exportserver.TokenName, token)
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return 0, fmt.Errorf("download %s: %w", target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("download %s: %s: %s", target, resp.Status, strings.TrimSpace(string(msg)))
	}
	var body io.Reader = resp.Body
	if gunzip {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return 0, fmt.Errorf("decompress %s: %w", target, err)
		}
		defer zr.Close()
		body = zr
	}
	return io.Copy(out, body)
}

// forwardToService forwards a local port (localPort; 0: any) to port 443's target of a ready
// pod behind the Service service, as `kubectl port-forward svc/...` does, and returns the
// local address and the channel that stops it.
func forwardToService(ctx context.Context, c *cliContext, kube kubernetes.Interface, ns, service, localPort string) (string, chan struct{}, error) {
	svc, err := kube.CoreV1().Services(ns).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return "", nil, err
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning && pods.Items[i].DeletionTimestamp == nil {
			pod = &pods.Items[i]
		}
	}
	if pod == nil || len(svc.Spec.Ports) == 0 {
		return "", nil, fmt.Errorf("no running pod behind Service %s/%s", ns, service)
	}
	cfg, err := c.restConfig()
	if err != nil {
		return "", nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return "", nil, err
	}
	req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod.Name).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"},
		[]string{fmt.Sprintf("%s:%d", localPort, svc.Spec.Ports[0].TargetPort.IntValue())}, stop, ready, io.Discard, c.streams.ErrOut)
	if err != nil {
		return "", nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return "", nil, fmt.Errorf("port-forward to pod %s/%s: %w", ns, pod.Name, err)
	case <-ctx.Done():
		close(stop)
		return "", nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return "", nil, errors.Join(fmt.Errorf("port-forward to pod %s/%s: no local port", ns, pod.Name), err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), stop, nil
}
