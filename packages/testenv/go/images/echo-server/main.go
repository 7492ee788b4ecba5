// Command echo-server is the small real workload of testenv's real-node tests: an HTTP server
// that tells a client which Pod answered and from where the request came, so a test can check
// Pod networking, Services and probes end to end.
//
//	GET /healthz  200 "ok" (for readiness and liveness probes)
//	GET /         200 {"hostname": ..., "podIP": ..., "remoteAddr": ...}
//
// It listens on $PORT (default 8080) on every address of the Pod and exits 0 after a graceful
// shutdown on SIGTERM (what the kubelet sends first) or SIGINT.
//
// `echo-server get URL` is the client side, for `kubectl exec` in a test (the image has no shell
// and no curl): it prints the body and exits 0 on a 2xx answer within 5 s, else prints why and
// exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type reply struct {
	Hostname   string `json:"hostname"`
	PodIP      string `json:"podIP,omitempty"`
	RemoteAddr string `json:"remoteAddr"`
}

func newHandler(hostname, podIP string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// "/" matches every path in a ServeMux; anything but the root itself is a typo in a test.
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if !readOnly(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply{Hostname: hostname, PodIP: podIP, RemoteAddr: r.RemoteAddr})
	})
	return mux
}

// readOnly answers 405 to anything but GET and HEAD, so a test that sends the wrong method learns it.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func get(url string) int {
	client := &http.Client{Timeout: 5 * time.Second}
	response, err := client.Get(url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo-server get: %v\n", err)
		return 1
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo-server get: reading the body: %v\n", err)
		return 1
	}
	_, _ = os.Stdout.Write(body)
	if response.StatusCode < 200 || response.StatusCode > 299 {
		fmt.Fprintf(os.Stderr, "echo-server get: %s\n", response.Status)
		return 1
	}
	return 0
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "get" {
		os.Exit(get(os.Args[2]))
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	hostname, err := os.Hostname()
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo-server: hostname: %v\n", err)
		os.Exit(1)
	}
	// An empty host binds every address (IPv4 and IPv6) of the Pod's network namespace.
	server := &http.Server{
		Addr:              ":" + port,
		Handler:           newHandler(hostname, os.Getenv("POD_IP")),
		ReadHeaderTimeout: 10 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	failed := make(chan error, 1)
	go func() {
		fmt.Printf("echo-server: listening on %s\n", server.Addr)
		if err := server.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			failed <- err
		}
	}()

	select {
	case err := <-failed:
		fmt.Fprintf(os.Stderr, "echo-server: %v\n", err)
		os.Exit(1)
	case <-ctx.Done():
	}
	// Finish in-flight requests well within the default 30 s termination grace period.
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil {
		fmt.Fprintf(os.Stderr, "echo-server: shutdown: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("echo-server: shut down")
}
