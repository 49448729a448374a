// Package identity is what a node's virt-handler proves to another in a live migration, and
// to virt-api when it serves consoles and guest commands (pkg/nodeclient): a certificate
// naming its node, issued through the certificates.k8s.io API under Hangar's own signer. virt-controller signs a request only when the requester is virt-handler's
// ServiceAccount with a token bound to the very node the request names, so a handler can
// name no node but its own, and nothing but a handler gets such a certificate.
package identity

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// SignerName is the certificates.k8s.io signer of migration identities.
const SignerName = "hangarvm.io/migration"

// Organization is the subject organization of every migration identity.
const Organization = "hangar:migration"

const commonNamePrefix = "hangar:migration:node:"

// Usages are the key usages a migration identity asks for and gets: it serves (the target)
// and dials (the source).
var Usages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature,
	certificatesv1.UsageClientAuth,
	certificatesv1.UsageServerAuth,
}

// CommonName is the subject common name of node's identity.
func CommonName(node string) string { return commonNamePrefix + node }

// Template is the request node's handler sends: the node in the common name and as the only
// DNS name, which is what a source verifies the target's serving certificate against.
func Template(node string) *x509.CertificateRequest {
	return &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: CommonName(node), Organization: []string{Organization}},
		DNSNames: []string{node},
	}
}

// CheckRequest says why req is not exactly node's identity request, or nil.
func CheckRequest(req *x509.CertificateRequest, node string) error {
	if err := req.CheckSignature(); err != nil {
		return fmt.Errorf("request signature: %w", err)
	}
	want := Template(node)
	switch {
	case req.Subject.CommonName != want.Subject.CommonName:
		return fmt.Errorf("common name %q, want %q", req.Subject.CommonName, want.Subject.CommonName)
	case !slices.Equal(req.Subject.Organization, want.Subject.Organization):
		return fmt.Errorf("organization %q, want %q", req.Subject.Organization, want.Subject.Organization)
	case len(req.Subject.OrganizationalUnit)+len(req.Subject.Country)+len(req.Subject.Locality)+
		len(req.Subject.Province)+len(req.Subject.StreetAddress)+len(req.Subject.PostalCode) > 0 ||
		req.Subject.SerialNumber != "":
		return fmt.Errorf("subject has more than a common name and organization")
	case !slices.Equal(req.DNSNames, want.DNSNames):
		return fmt.Errorf("DNS names %q, want %q", req.DNSNames, want.DNSNames)
	case len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0:
		return fmt.Errorf("names other than the node's DNS name")
	}
	return nil
}

// CheckUsages says why usages are not a subset of Usages (plus key encipherment, which RSA
// keys add), or nil.
func CheckUsages(usages []certificatesv1.KeyUsage) error {
	for _, u := range usages {
		if !slices.Contains(Usages, u) && u != certificatesv1.UsageKeyEncipherment {
			return fmt.Errorf("usage %q is not a migration identity's", u)
		}
	}
	return nil
}

// NodeOf is the node a verified peer certificate names ("" and an error when it names
// none, or not in the form CheckRequest admits).
func NodeOf(cert *x509.Certificate) (string, error) {
	node, ok := strings.CutPrefix(cert.Subject.CommonName, commonNamePrefix)
	if !ok || !slices.Equal(cert.Subject.Organization, []string{Organization}) {
		return "", fmt.Errorf("certificate %q is no migration identity", cert.Subject.CommonName)
	}
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return "", fmt.Errorf("certificate names node %q: %s", node, strings.Join(errs, "; "))
	}
	if !slices.Equal(cert.DNSNames, []string{node}) {
		return "", fmt.Errorf("certificate for node %q has DNS names %q", node, cert.DNSNames)
	}
	return node, nil
}
