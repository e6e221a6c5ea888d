package proxmox

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	pve "github.com/luthermonson/go-proxmox"

	"horizon/shared/horizon"
	"horizon/shared/secrets"
)

// Config is how to reach one PVE cluster's API.
type Config struct {
	// URL is the API endpoint, e.g. https://pve1.example.org:8006 (without /api2/json).
	URL string
	// TokenID is "USER@REALM!TOKENID"; TokenSecret its secret.
	TokenID     string
	TokenSecret secrets.Value
	// Fingerprint pins the SHA-256 of the server's leaf certificate (hex, colons optional, as
	// PVE shows it). CACert is a PEM bundle to verify the chain instead. At least one is
	// required; with both, the chain must verify and the leaf must match the pin.
	Fingerprint string
	CACert      []byte
	// Timeout bounds one request (default 30 s); Retries is the number of attempts for
	// transient failures (default 3).
	Timeout time.Duration
	Retries int
}

// Client talks to one PVE cluster. It is safe for concurrent use.
type Client struct {
	api *pve.Client
	cfg Config
}

var errPinMismatch = errors.New("certificate fingerprint does not match the pinned one")

// NormalizeFingerprint returns a SHA-256 certificate fingerprint in PVE's form (upper-case hex
// pairs joined by colons), or an error if s is not one.
func NormalizeFingerprint(s string) (string, error) {
	h := strings.ToUpper(strings.NewReplacer(":", "", " ", "").Replace(strings.TrimSpace(s)))
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return "", errors.New("must be the SHA-256 fingerprint of the certificate: 32 hex pairs, e.g. AB:CD:…")
	}
	pairs := make([]string, len(b))
	for i, x := range b {
		pairs[i] = fmt.Sprintf("%02X", x)
	}
	return strings.Join(pairs, ":"), nil
}

// New returns a client for cfg. It does not contact the server.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, errors.New("proxmox: the API URL must be https://host[:port]")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 3
	}
	tlsConfig, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		TLSClientConfig:       tlsConfig,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
	}
	httpClient := &http.Client{Timeout: cfg.Timeout, Transport: &retryTransport{base: transport, attempts: cfg.Retries}}
	base := strings.TrimSuffix(u.String(), "/") + "/api2/json"
	return &Client{
		api: pve.NewClient(base, pve.WithHTTPClient(httpClient), pve.WithAPIToken(cfg.TokenID, cfg.TokenSecret.Reveal())),
		cfg: cfg,
	}, nil
}

// tlsConfig verifies the server by CA, by pinned fingerprint, or both. Without a CA the chain
// is not checked by crypto/tls (a fresh PVE node's certificate is self-signed); the pin is then
// what authenticates the server, checked in VerifyConnection during the handshake.
func tlsConfig(cfg Config) (*tls.Config, error) {
	var pin []byte
	if cfg.Fingerprint != "" {
		norm, err := NormalizeFingerprint(cfg.Fingerprint)
		if err != nil {
			return nil, fmt.Errorf("proxmox: tls fingerprint %w", err)
		}
		pin, _ = hex.DecodeString(strings.ReplaceAll(norm, ":", ""))
	}
	var roots *x509.CertPool
	if len(cfg.CACert) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(cfg.CACert) {
			return nil, errors.New("proxmox: the CA certificate is not PEM")
		}
	}
	if pin == nil && roots == nil {
		return nil, errors.New("proxmox: a TLS fingerprint or a CA certificate is required; verification cannot be turned off")
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            roots,
		InsecureSkipVerify: roots == nil, // the pin below replaces chain verification
		VerifyConnection: func(cs tls.ConnectionState) error {
			if pin == nil {
				return nil
			}
			if len(cs.PeerCertificates) == 0 {
				return errPinMismatch
			}
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if string(sum[:]) != string(pin) {
				return fmt.Errorf("%w (got %s)", errPinMismatch, fingerprintString(sum[:]))
			}
			return nil
		},
	}, nil
}

func fingerprintString(b []byte) string {
	pairs := make([]string, len(b))
	for i, x := range b {
		pairs[i] = fmt.Sprintf("%02X", x)
	}
	return strings.Join(pairs, ":")
}

// Get decodes the data of GET path (relative to /api2/json) into v.
func (c *Client) Get(ctx context.Context, path string, v any) error {
	return classify("GET "+path, c.api.Get(ctx, path, v))
}

// Post sends data as the body of POST path and decodes the answer's data into v.
func (c *Client) Post(ctx context.Context, path string, data, v any) error {
	return classify("POST "+path, c.api.Post(ctx, path, data, v))
}

// Put sends data as the body of PUT path and decodes the answer's data into v.
func (c *Client) Put(ctx context.Context, path string, data, v any) error {
	return classify("PUT "+path, c.api.Put(ctx, path, data, v))
}

// Delete sends DELETE path and decodes the answer's data into v.
func (c *Client) Delete(ctx context.Context, path string, v any) error {
	return classify("DELETE "+path, c.api.Delete(ctx, path, v))
}

// WaitTask waits until the task with upid finishes, polling every interval (default 250 ms),
// and returns an error of kind ErrTaskFailed with PVE's exit status if it failed.
func (c *Client) WaitTask(ctx context.Context, upid string, interval time.Duration) error {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	t := pve.NewTask(pve.UPID(upid), c.api)
	// max is ctx's business; go-proxmox wants one, so give it the longest a task may run.
	return classify("task "+upid, t.Wait(ctx, interval, 24*time.Hour))
}

// TrustBundle returns PEM certificates that verify this cluster's API for tools Horizon runs
// (curl in a Terraform local-exec, a provider): the configured CA, or else the certificate chain
// the server presents, read over a connection verified against the pinned fingerprint.
func (c *Client) TrustBundle(ctx context.Context) ([]byte, error) {
	if len(c.cfg.CACert) > 0 {
		return c.cfg.CACert, nil
	}
	u, _ := url.Parse(c.cfg.URL) // parsed by New
	host := u.Host
	if u.Port() == "" {
		host += ":443"
	}
	tc, err := tlsConfig(c.cfg)
	if err != nil {
		return nil, err
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: tc}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, classify("TLS "+host, err)
	}
	defer conn.Close()
	var out []byte
	for _, cert := range conn.(*tls.Conn).ConnectionState().PeerCertificates {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	return out, nil
}

// ForServer returns a client of a registered server, opening its token with box.
func ForServer(box *secrets.Box, srv horizon.ProxmoxServer, timeout time.Duration) (*Client, error) {
	token, err := box.OpenString(horizon.PurposeProxmoxTokenSecret, srv.TokenSecret)
	if err != nil {
		return nil, fmt.Errorf("open the token of %s: %w", srv.Name, err)
	}
	return New(Config{URL: srv.APIURL, TokenID: srv.TokenID, TokenSecret: token, Fingerprint: srv.TLSFingerprint,
		CACert: []byte(srv.CACert), Timeout: timeout})
}
