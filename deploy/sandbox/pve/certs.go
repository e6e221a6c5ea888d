package pve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// certs is a cluster's TLS material: a CA (PVE's pve-root-ca) and the API certificate it
// signed. With a data directory both are kept there, so fingerprints survive restarts.
type certs struct {
	dir   string // "" keeps everything in memory
	names []string

	mu     sync.Mutex
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	leaf   tls.Certificate
}

const (
	caFile   = "pve-root-ca.pem"
	caKeyKey = "pve-root-ca.key"
	leafFile = "pve-ssl.pem"
	leafKey  = "pve-ssl.key"
)

func loadOrCreateCerts(dir string, nodeNames []string) (*certs, error) {
	c := &certs{dir: dir, names: nodeNames}
	if dir != "" {
		err := c.load()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := c.createCA(); err != nil {
		return nil, err
	}
	if err := c.issueLeaf(); err != nil {
		return nil, err
	}
	return c, c.save()
}

func (c *certs) load() error {
	caPEM, err := os.ReadFile(filepath.Join(c.dir, caFile))
	if err != nil {
		return err
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(c.dir, caKeyKey))
	if err != nil {
		return err
	}
	leafPEM, err := os.ReadFile(filepath.Join(c.dir, leafFile))
	if err != nil {
		return err
	}
	leafKeyPEM, err := os.ReadFile(filepath.Join(c.dir, leafKey))
	if err != nil {
		return err
	}
	b, _ := pem.Decode(caPEM)
	if b == nil {
		return fmt.Errorf("%s: no PEM block", caFile)
	}
	if c.caCert, err = x509.ParseCertificate(b.Bytes); err != nil {
		return fmt.Errorf("parse %s: %w", caFile, err)
	}
	b, _ = pem.Decode(caKeyPEM)
	if b == nil {
		return fmt.Errorf("%s: no PEM block", caKeyKey)
	}
	if c.caKey, err = x509.ParseECPrivateKey(b.Bytes); err != nil {
		return fmt.Errorf("parse %s: %w", caKeyKey, err)
	}
	if c.leaf, err = tls.X509KeyPair(leafPEM, leafKeyPEM); err != nil {
		return fmt.Errorf("load %s: %w", leafFile, err)
	}
	return nil
}

func (c *certs) save() error {
	if c.dir == "" {
		return nil
	}
	keyDER, err := x509.MarshalECPrivateKey(c.caKey)
	if err != nil {
		return err
	}
	leafKeyDER, err := x509.MarshalECPrivateKey(c.leaf.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return err
	}
	files := map[string][]byte{
		caFile:   c.caPEM(),
		caKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		leafFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.leaf.Certificate[0]}),
		leafKey:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: leafKeyDER}),
	}
	for name, data := range files {
		if err := writeFileAtomic(filepath.Join(c.dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (c *certs) createCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "Proxmox Virtual Environment (sandbox)", OrganizationalUnit: []string{"PVE Cluster Manager CA"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	c.caCert, err = x509.ParseCertificate(der)
	c.caKey = key
	return err
}

// issueLeaf makes a new API key and certificate, valid for the loopback addresses,
// localhost and every node name.
func (c *certs) issueLeaf() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "pve-sandbox", OrganizationalUnit: []string{"PVE Cluster Node"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(2, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     append([]string{"localhost"}, c.names...),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.caCert, &key.PublicKey, c.caKey)
	if err != nil {
		return err
	}
	c.leaf = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the OS has no entropy source
	}
	return n
}

func (c *certs) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	leaf := c.leaf
	return &leaf, nil
}

func (c *certs) rotate() (string, error) {
	c.mu.Lock()
	err := c.issueLeaf()
	if err == nil {
		err = c.save()
	}
	c.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("rotate certificate: %w", err)
	}
	return c.fingerprint(), nil
}

func (c *certs) fingerprint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := sha256.Sum256(c.leaf.Certificate[0])
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

func (c *certs) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.caCert.Raw})
}

// writeFileAtomic writes data to a temporary file beside path and renames it into place,
// so a crash never leaves a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
