package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// CredBench is part (g), issue 18's anchors: a 100 MB HTTPS download and
// small requests from curl inside a real fedmem-run session, through the
// credential-injecting path (fedmem-run's proxy, fedmem-cred terminating
// TLS with the session CA and putting the real key on the wire), against
// the same curl run unsandboxed, straight to the same loopback server.
type CredBench struct {
	Bytes        int64     `json:"bytes"`
	DirectMBs    []float64 `json:"direct_mb_s"`
	InjectedMBs  []float64 `json:"injected_mb_s"`
	Ratio        float64   `json:"ratio_of_medians"`
	DirectP50    float64   `json:"direct_request_p50_ms"`
	InjectedP50  float64   `json:"injected_request_p50_ms"`
	AddedP50     float64   `json:"added_request_p50_ms"`
	Requests     int       `json:"requests"`
	ServerSawKey bool      `json:"server_saw_real_key"`
}

const credBenchKey = "sk-bench-api03-0123456789abcdefghijklmnopqrstuvwxyzABCDEF"

func benchCred(o options, res *Result, runBin, v string, log io.Writer) error {
	const size = 100 << 20
	const downloads, requests = 3, 17
	if _, err := exec.LookPath("curl"); err != nil {
		res.Skipped = append(res.Skipped, "credential proxy: curl not installed")
		return nil
	}
	work, err := os.MkdirTemp(o.cache, "cred-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	os.Chmod(work, 0o755)
	caPEM, leaf, err := benchCerts()
	if err != nil {
		return err
	}
	caFile := filepath.Join(work, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		return err
	}
	var sawKey, sawOther atomic.Int64
	block := make([]byte, 256<<10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.Header.Get("X-Api-Key") == credBenchKey {
			sawKey.Add(1)
		} else {
			sawOther.Add(1)
		}
		if q.URL.Path != "/big" {
			io.WriteString(w, "ok\n")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for n := size; n > 0; n -= len(block) {
			w.Write(block[:min(n, len(block))])
		}
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{*leaf}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	addr := ln.Addr().String()
	base := "https://" + addr
	curl := func(extra []string, n int, path string) []string {
		args := append([]string{"curl", "-sS", "-o", "/dev/null", "-H", "x-api-key: $BENCH_API_KEY", "-w", "%{time_total} %{speed_download}\\n"}, extra...)
		for i := 0; i < n; i++ {
			args = append(args, base+path)
		}
		return args
	}
	parse := func(out string) (times, speeds []float64) {
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 {
				continue
			}
			t, _ := strconv.ParseFloat(f[0], 64)
			s, _ := strconv.ParseFloat(f[1], 64)
			times, speeds = append(times, t*1000), append(speeds, s/1e6)
		}
		return
	}
	shell := func(args []string) string {
		q := make([]string, len(args))
		for i, a := range args {
			if strings.Contains(a, "$BENCH_API_KEY") {
				q[i] = `"` + a + `"`
			} else {
				q[i] = "'" + a + "'"
			}
		}
		return strings.Join(q, " ")
	}
	prof := filepath.Join(work, "credbench.yaml")
	body := "name: credbench\nextends: default\nnetwork: allowlist\nallow: [\"" + addr + "\"]\n" +
		"credentials:\n  - {name: bench-key, env: BENCH_API_KEY, hosts: [\"" + addr + "\"], header: x-api-key}\n"
	if err := os.WriteFile(prof, []byte(body), 0o644); err != nil {
		return err
	}
	wd := filepath.Join(work, "wd")
	os.Mkdir(wd, 0o755)
	// Alternating rounds (the load of a shared host moves between them):
	// one download and a burst of small requests each, outside with the
	// same curl straight to the server, inside from a session whose
	// profile names the key for that host.
	var dTimes, dSpeeds, iTimes, iSpeeds []float64
	for round := 0; round < downloads; round++ {
		direct := exec.Command("/bin/sh", "-c", shell(curl([]string{"--cacert", caFile}, 1, "/big"))+" && "+shell(curl([]string{"--cacert", caFile}, requests, "/small")))
		direct.Env = append(os.Environ(), "BENCH_API_KEY="+credBenchKey)
		out, err := direct.CombinedOutput()
		if err != nil {
			return fmt.Errorf("credential bench, direct curl: %v\n%s", err, out)
		}
		t, sp := parse(string(out))
		if len(sp) != 1+requests {
			return fmt.Errorf("credential bench: direct curl reported %d transfers, want %d\n%s", len(sp), 1+requests, out)
		}
		dSpeeds, dTimes = append(dSpeeds, sp[0]), append(dTimes, t[2:]...) // the first small request opens the connection
		script := shell(curl(nil, 1, "/big")) + " && " + shell(curl(nil, requests, "/small"))
		cmd := exec.Command(runBin, "--vault", v, "--workdir", wd, "--profile", prof, "--", "/bin/sh", "-c", script)
		// The helper verifies the server against the caller's roots: the
		// test CA stands in for them.
		cmd.Env = append(os.Environ(), "BENCH_API_KEY="+credBenchKey, "SSL_CERT_FILE="+caFile)
		cmd.Dir = wd
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("credential bench, session: %v\n%s%s", err, so.String(), se.String())
		}
		t, sp = parse(so.String())
		if len(sp) != 1+requests {
			return fmt.Errorf("credential bench: curl inside reported %d transfers, want %d\n%s%s", len(sp), 1+requests, so.String(), se.String())
		}
		iSpeeds, iTimes = append(iSpeeds, sp[0]), append(iTimes, t[2:]...)
	}
	cb := &CredBench{Bytes: size, DirectMBs: dSpeeds, InjectedMBs: iSpeeds, Requests: len(iTimes),
		ServerSawKey: sawKey.Load() == int64(2*downloads*(1+requests)) && sawOther.Load() == 0}
	cb.Ratio = median(cb.InjectedMBs) / median(cb.DirectMBs)
	cb.DirectP50, cb.InjectedP50 = median(dTimes), median(iTimes)
	cb.AddedP50 = cb.InjectedP50 - cb.DirectP50
	res.Cred = cb
	fmt.Fprintf(log, "credential proxy: %.0f vs %.0f MB/s (%.2f×), request p50 %.2f vs %.2f ms\n", median(cb.InjectedMBs), median(cb.DirectMBs), cb.Ratio, cb.InjectedP50, cb.DirectP50)
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func printCred(w io.Writer, res *Result) {
	c := res.Cred
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\ncredential proxy (curl inside a session, through fedmem-cred, vs the same curl outside; loopback TLS):\n")
	fmt.Fprintf(w, "  100 MB download: injected %s MB/s, direct %s MB/s: %.2f× (anchor ≥ 0.9×)\n", floats(c.InjectedMBs), floats(c.DirectMBs), c.Ratio)
	fmt.Fprintf(w, "  request p50 over %d keep-alive requests (each round's first left out): injected %.2f ms, direct %.2f ms: +%.2f ms (anchor ≤ 2 ms)\n", c.Requests, c.InjectedP50, c.DirectP50, c.AddedP50)
	fmt.Fprintf(w, "  every request reached the server with the real key: %v\n", c.ServerSawKey)
}

func floats(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, "/")
}

func credTargets(res *Result) []Target {
	c := res.Cred
	if c == nil {
		return nil
	}
	return []Target{
		{Name: "credential proxy: 100 MB download vs unsandboxed", Value: c.Ratio, Unit: "×", Anchor: "≥ 0.9 (issue 18)", Met: c.Ratio >= 0.9},
		{Name: "credential proxy: added latency per request, p50", Value: c.AddedP50, Unit: "ms", Anchor: "≤ 2 (issue 18)", Met: c.AddedP50 <= 2},
	}
}

// benchCerts makes a test CA and its certificate for 127.0.0.1.
func benchCerts() ([]byte, *tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fedmem bench roots"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	lT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, lT, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), &tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}, nil
}
