package kubeapiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// files are what a server is started with, in its directory.
type files struct {
	caCert, servingCert, servingKey string // the serving certificate, signed by caCert
	saPub, saKey                    string // the service-account signing key pair
	tokens                          string // the token file
}

// writeFiles writes a CA, a serving certificate for 127.0.0.1 and localhost
// signed by it, a service-account key pair and the token file into dir.
func writeFiles(dir string, users []User) (files, error) {
	f := files{
		caCert: filepath.Join(dir, "ca.crt"), servingCert: filepath.Join(dir, "serving.crt"),
		servingKey: filepath.Join(dir, "serving.key"), saPub: filepath.Join(dir, "sa.pub"),
		saKey: filepath.Join(dir, "sa.key"), tokens: filepath.Join(dir, "tokens.csv"),
	}
	caDER, der, keyDER, err := servingCert()
	if err != nil {
		return f, err
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return f, err
	}
	saDER, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return f, err
	}
	writes := []struct {
		path, kind string
		der        []byte
	}{
		{f.caCert, "CERTIFICATE", caDER}, {f.servingCert, "CERTIFICATE", der},
		{f.servingKey, "PRIVATE KEY", keyDER}, {f.saPub, "PUBLIC KEY", saDER},
		{f.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)},
	}
	for _, w := range writes {
		if err := os.WriteFile(w.path, pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der}), 0o600); err != nil {
			return f, err
		}
	}
	var csv []byte
	for i, u := range users {
		csv = fmt.Appendf(csv, "%s,%s,uid-%d", u.Token, u.Name, i)
		if u.Group != "" {
			csv = fmt.Appendf(csv, ",%q", u.Group)
		}
		csv = append(csv, '\n')
	}
	return f, os.WriteFile(f.tokens, csv, 0o600)
}

// servingCert returns a new CA's certificate, and a serving certificate for
// 127.0.0.1 and localhost that it signed with its key, all DER.
func servingCert() (caDER, der, keyDER []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shedlock-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	if caDER, err = x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey); err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	if der, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey); err != nil {
		return nil, nil, nil, err
	}
	keyDER, err = x509.MarshalPKCS8PrivateKey(key)
	return caDER, der, keyDER, err
}
