// SPDX-License-Identifier: Apache-2.0
// kvget: one HTTPS GET with Go's crypto/tls (its own ClientHello: its
// extension order, no GREASE) for the kernel-verified path suite
// (kverify.sh). Prints one JSON line: ok, code or errno.
//
//	kvget URL CAFILE
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	out := map[string]interface{}{"client": "go"}
	defer func() { b, _ := json.Marshal(out); fmt.Println(string(b)) }()
	pem, err := os.ReadFile(os.Args[2])
	if err != nil {
		out["ok"], out["errno"] = false, err.Error()
		return
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Proxy: nil},
	}
	r, err := c.Get(os.Args[1])
	if err != nil {
		out["ok"], out["errno"] = false, err.Error()
		return
	}
	r.Body.Close()
	out["ok"], out["code"] = true, fmt.Sprint(r.StatusCode)
}
