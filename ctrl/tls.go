package ctrl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// TLSConfig names the files for TLS on the control channel. The responder
// needs CertFile and KeyFile; with CAFile it also requires client
// certificates signed by that CA. The client verifies the responder against
// CAFile (the system roots if empty) and presents CertFile and KeyFile if
// set.
type TLSConfig struct {
	CertFile   string
	KeyFile    string
	CAFile     string
	ServerName string // client: the name to verify; default the host of the dialled address
	// InsecureSkipVerify makes the client accept any responder certificate.
	// The channel is then encrypted but open to a man in the middle; the
	// token handshake still detects a responder without the token.
	InsecureSkipVerify bool
}

// Validate checks that the named files exist, are readable and hold what
// they should, naming each one that does not.
func (t TLSConfig) Validate() error {
	_, _, err := t.load()
	return err
}

func (t TLSConfig) load() (*tls.Certificate, *x509.CertPool, error) {
	var errs []error
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, errors.New("ctrl: TLS needs CertFile and KeyFile together; one of them is empty"))
	}
	certPEM, err := readTLSFile("CertFile", t.CertFile)
	errs = append(errs, err)
	keyPEM, err := readTLSFile("KeyFile", t.KeyFile)
	errs = append(errs, err)
	caPEM, err := readTLSFile("CAFile", t.CAFile)
	errs = append(errs, err)

	var cert *tls.Certificate
	if certPEM != nil && keyPEM != nil {
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			errs = append(errs, fmt.Errorf("ctrl: TLS CertFile %s and KeyFile %s are not a certificate and its PEM private key: %w", t.CertFile, t.KeyFile, err))
		} else {
			cert = &c
		}
	}
	var pool *x509.CertPool
	if caPEM != nil {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			errs = append(errs, fmt.Errorf("ctrl: TLS CAFile %s holds no PEM certificate (want one or more \"BEGIN CERTIFICATE\" blocks)", t.CAFile))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return cert, pool, nil
}

// readTLSFile reads a named file, or returns nil for an empty name.
func readTLSFile(field, name string) ([]byte, error) {
	if name == "" {
		return nil, nil
	}
	b, err := os.ReadFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("ctrl: TLS %s %s does not exist", field, name)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("ctrl: TLS %s %s is not readable by this user; fix its permissions or run as its owner", field, name)
	case err != nil:
		return nil, fmt.Errorf("ctrl: TLS %s: %w", field, err)
	}
	return b, nil
}

// ServerConfig is the responder's TLS configuration: TLS 1.3 only, and
// client certificates required when CAFile is set.
func (t TLSConfig) ServerConfig() (*tls.Config, error) {
	cert, pool, err := t.load()
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, errors.New("ctrl: a TLS responder needs CertFile and KeyFile")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{*cert}}
	if pool != nil {
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig is the client's TLS configuration: TLS 1.3 only.
func (t TLSConfig) ClientConfig() (*tls.Config, error) {
	cert, pool, err := t.load()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		RootCAs:            pool,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if cert != nil {
		// Always present the certificate, even when the responder asks for
		// another CA's: Go's default would send none, and the responder's
		// error would then hide that a certificate was configured at all.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg, nil
}

// Listen listens on a TCP address, with TLS if tlsCfg is not nil. The TLS
// handshake of each accepted connection runs in Server, under its deadline.
func Listen(addr string, tlsCfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("ctrl: cannot listen on %s: the address is in use (another rdmarun serve, or another program, listens there; pick another port): %w", addr, err)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("ctrl: cannot listen on %s: permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE): %w", addr, err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("ctrl: cannot listen on %s: no local interface has that address: %w", addr, err)
	case err != nil:
		return nil, fmt.Errorf("ctrl: cannot listen on %s: %w", addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return ln, nil
}

// Dial connects to a responder, with TLS if tlsCfg is not nil, within the
// context's deadline or DefaultTimeout. The TLS handshake is part of it.
func Dial(ctx context.Context, addr string, tlsCfg *tls.Config) (net.Conn, error) {
	limit := DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		limit = time.Until(dl)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	d := &net.Dialer{}
	var nc net.Conn
	var err error
	if tlsCfg != nil {
		nc, err = (&tls.Dialer{NetDialer: d, Config: tlsCfg}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, dialError(ctx, addr, limit, err)
	}
	return nc, nil
}

func dialError(ctx context.Context, addr string, limit time.Duration, err error) error {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if !errors.As(err, &opErr) || opErr.Op != "dial" {
		if errors.As(err, &dnsErr) {
			return fmt.Errorf("ctrl: cannot resolve the host of %s: %w", addr, err)
		}
		// Connected, so the TLS handshake failed.
		return tlsError(addr, false, limit, err)
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("ctrl: connection to %s refused: nothing listens there (is rdmarun serve running on that host and port?): %w", addr, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("ctrl: connecting to %s: stopped: %w", addr, err)
	case isDeadline(err) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("ctrl: no answer from %s within %s (is the host up, is rdmarun serve running there, and does a firewall let TCP to that port through?): %w", addr, fmtDur(limit), err)
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("ctrl: %s is unreachable (check the address, the route to it, and firewalls on the way): %w", addr, err)
	}
	return fmt.Errorf("ctrl: cannot connect to %s: %w", addr, err)
}

// tlsError explains a failed TLS handshake with peer.
func tlsError(peer string, server bool, limit time.Duration, err error) error {
	var rh tls.RecordHeaderError
	var verr *tls.CertificateVerificationError
	var opErr *net.OpError
	switch {
	case errors.As(err, &rh) && [4]byte(rh.RecordHeader[:4]) == magic:
		return fmt.Errorf("ctrl: %s answered in plain text: it does not use TLS; enable TLS there or disable it here: %w", peer, err)
	case errors.As(err, &rh):
		return fmt.Errorf("ctrl: %s did not answer with TLS (first bytes %q; is it an rdmarun responder?): %w", peer, rh.RecordHeader[:], err)
	case errors.As(err, &verr) && server:
		return fmt.Errorf("ctrl: TLS: the certificate of client %s does not verify against this responder's CAFile: %w", peer, err)
	case errors.As(err, &verr):
		return fmt.Errorf("ctrl: TLS: the certificate of %s does not verify (set CAFile to the CA that signed it, and ServerName to a name in it if the address is not): %w", peer, err)
	case errors.As(err, &opErr) && opErr.Op == "remote error" && server:
		return fmt.Errorf("ctrl: TLS: client %s refused this responder's certificate (the client needs the CA that signed it as CAFile, and a ServerName the certificate holds): %w", peer, err)
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return fmt.Errorf("ctrl: TLS: %s refused the handshake (does it require a client certificate signed by its CAFile?): %w", peer, err)
	case server && strings.Contains(err.Error(), "didn't provide a certificate"):
		// crypto/tls has no error type for this one.
		return fmt.Errorf("ctrl: TLS: client %s sent no certificate, and this responder requires one signed by its CAFile: %w", peer, err)
	case isDeadline(err) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("ctrl: TLS: %s did not complete the handshake within %s (does it use TLS?): %w", peer, fmtDur(limit), err)
	}
	return fmt.Errorf("ctrl: TLS handshake with %s failed: %w", peer, err)
}
