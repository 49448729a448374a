// Package migrationsigner issues the nodes' migration identities (package
// migration/identity): it approves and signs the certificates.k8s.io requests for signer
// hangarvm.io/migration that virt-handler makes, when the requester is virt-handler's
// ServiceAccount with a token bound to the node the request names, and denies every other.
package migrationsigner

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/hangarvm/hangar/pkg/migration/identity"
)

// FieldSelector selects the requests this signer answers (for the informer's lists).
const FieldSelector = "spec.signerName=" + identity.SignerName

// DefaultLifetime is how long an identity is valid; the handler renews it well before.
const DefaultLifetime = 24 * time.Hour

// CA is the migration identities' certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// LoadCA reads a PEM certificate and key.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", keyFile)
	}
	return &CA{Cert: cert, Key: signer}, nil
}

// Signer is the controller.
type Signer struct {
	kube     kubernetes.Interface
	lister   certlisters.CertificateSigningRequestLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	ca       *CA
	handlers sets.Set[string]
	lifetime time.Duration
	now      func() time.Time
}

// New answers the requests informer sees (it should list FieldSelector only) with ca, for
// requesters among handlers (virt-handler's ServiceAccount user names).
func New(kube kubernetes.Interface, informer certinformers.CertificateSigningRequestInformer, ca *CA, handlers ...string) (*Signer, error) {
	s := &Signer{
		kube: kube, lister: informer.Lister(), synced: informer.Informer().HasSynced, ca: ca,
		handlers: sets.New(handlers...), lifetime: DefaultLifetime, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "migration-signer"}),
	}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.enqueue,
		UpdateFunc: func(_, o any) { s.enqueue(o) },
	})
	return s, err
}

func (s *Signer) enqueue(obj any) {
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && csr.Spec.SignerName == identity.SignerName {
		s.queue.Add(csr.Name)
	}
}

// Run works the queue until ctx ends.
func (s *Signer) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer s.queue.ShutDown()
	if !cache.WaitForNamedCacheSync("migration-signer", ctx.Done(), s.synced) {
		return errors.New("migration-signer: caches did not sync")
	}
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for s.next(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (s *Signer) next(ctx context.Context) bool {
	name, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(name)
	if err := s.sync(ctx, name); err != nil {
		klog.ErrorS(err, "migration identity request", "csr", name)
		s.queue.AddRateLimited(name)
		return true
	}
	s.queue.Forget(name)
	return true
}

// sync answers one request: denied with the reason, or approved and signed.
func (s *Signer) sync(ctx context.Context, name string) error {
	csr, err := s.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if csr.Spec.SignerName != identity.SignerName || len(csr.Status.Certificate) > 0 || finished(csr) {
		return nil
	}
	csr = csr.DeepCopy()
	req, node, err := s.check(csr)
	if err != nil {
		klog.InfoS("denied a migration identity request", "csr", name, "user", csr.Spec.Username, "reason", err.Error())
		return s.answer(ctx, csr, certificatesv1.CertificateDenied, "NotAMigrationIdentity", err.Error())
	}
	if !has(csr, certificatesv1.CertificateApproved) {
		if err := s.answer(ctx, csr, certificatesv1.CertificateApproved, "NodeMigrationIdentity",
			"virt-handler of node "+node+" asked for its own migration identity"); err != nil {
			return err
		}
		// The informer brings the approved request back; sign it then, from the stored object.
		return nil
	}
	der, err := s.sign(req, csr)
	if err != nil {
		return err
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	_, err = s.kube.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	if err == nil {
		klog.InfoS("issued a migration identity", "csr", name, "node", node)
	}
	return err
}

// check is the signer's policy: the request is a node's identity request, made by that
// node's virt-handler.
func (s *Signer) check(csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, string, error) {
	if !s.handlers.Has(csr.Spec.Username) {
		return nil, "", fmt.Errorf("requester %q is not virt-handler", csr.Spec.Username)
	}
	nodes := csr.Spec.Extra[serviceaccount.NodeNameKey]
	if len(nodes) != 1 || nodes[0] == "" {
		return nil, "", fmt.Errorf("the requester's token is bound to no node (%s: %q)", serviceaccount.NodeNameKey, []string(nodes))
	}
	node := nodes[0]
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, "", errors.New("spec.request is no PEM certificate request")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("spec.request: %w", err)
	}
	if err := identity.CheckRequest(req, node); err != nil {
		return nil, "", fmt.Errorf("not node %s's identity: %w", node, err)
	}
	if err := identity.CheckUsages(csr.Spec.Usages); err != nil {
		return nil, "", err
	}
	return req, node, nil
}

// sign issues the certificate: the request's subject and DNS name, client and server use,
// valid for the lifetime (or the request's shorter expirationSeconds) within the CA's own.
func (s *Signer) sign(req *x509.CertificateRequest, csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	now := s.now()
	lifetime := s.lifetime
	if e := csr.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < lifetime {
		lifetime = max(time.Duration(*e)*time.Second, 10*time.Minute)
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(s.ca.Cert.NotAfter) {
		notAfter = s.ca.Cert.NotAfter
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		NotBefore:    now.Add(-5 * time.Minute), // clock skew between nodes
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	return x509.CreateCertificate(rand.Reader, tmpl, s.ca.Cert, req.PublicKey, s.ca.Key)
}

// answer adds a condition and writes it through the approval subresource.
func (s *Signer) answer(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType, reason, msg string) error {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(s.now()),
	})
	_, err := s.kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	return err
}

func has(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// finished: denied or failed requests stay so.
func finished(csr *certificatesv1.CertificateSigningRequest) bool {
	return has(csr, certificatesv1.CertificateDenied) || has(csr, certificatesv1.CertificateFailed)
}
