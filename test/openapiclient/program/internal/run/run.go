// Package run holds what the client programs share that does not depend on the generated
// client: where the server is and how to trust it, waiting, checking answers.
package run

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Target is the server and the VM a program works on, from its environment: HANGAR_URL,
// HANGAR_CA (a PEM file), HANGAR_SERVER_NAME, HANGAR_TOKEN, HANGAR_NAMESPACE, HANGAR_VM.
type Target struct {
	URL, Namespace, Name string
	HTTP                 *http.Client
	token                string
}

// FromEnv reads the target from the environment.
func FromEnv() (*Target, error) {
	t := &Target{URL: os.Getenv("HANGAR_URL"), Namespace: os.Getenv("HANGAR_NAMESPACE"), Name: os.Getenv("HANGAR_VM"),
		token: os.Getenv("HANGAR_TOKEN")}
	if t.URL == "" || t.Namespace == "" || t.Name == "" {
		return nil, fmt.Errorf("HANGAR_URL, HANGAR_NAMESPACE and HANGAR_VM must be set")
	}
	ca, err := os.ReadFile(os.Getenv("HANGAR_CA"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", os.Getenv("HANGAR_CA"))
	}
	t.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: os.Getenv("HANGAR_SERVER_NAME"), MinVersion: tls.VersionTLS12}}}
	return t, nil
}

// Authorize adds the bearer token to a request; its signature is that of the generated
// clients' request editors.
func (t *Target) Authorize(_ context.Context, req *http.Request) error {
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	return nil
}

// JSON is v as a request body.
func JSON(v interface{}) io.Reader {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return bytes.NewReader(raw)
}

// Expect fails unless a call answered want.
func Expect(what string, code int, body []byte, want int) error {
	if code != want {
		return fmt.Errorf("%s: answered %d, want %d: %s", what, code, want, body)
	}
	fmt.Printf("%s: %d\n", what, code)
	return nil
}

// Wait polls done until it says so, fails, or a minute passes.
func Wait(ctx context.Context, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, err := done()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			fmt.Printf("%s: done\n", what)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Retry calls call until it answers other than 503 (the instance's node may not know the
// instance yet: a real client retries too), for at most a minute.
func Retry(ctx context.Context, what string, call func() (int, error)) (int, error) {
	var code int
	err := Wait(ctx, what, func() (bool, error) {
		var err error
		code, err = call()
		return code != http.StatusServiceUnavailable, err
	})
	return code, err
}
