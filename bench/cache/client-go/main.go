// Command client-go-bench measures how long client-go's shared informer takes to sync
// BENCH_EXPECTED ConfigMaps from namespace BENCH_NAMESPACE, and the process's peak RSS, under the
// list semantics the driver asks for (BENCH_LIST, BENCH_MANAGED_FIELDS; the reflector's pager
// asks for pages of 500, the driver's BENCH_PAGE_SIZE).
// It prints one JSON line: {"syncMs":…,"count":…,"maxRssBytes":…}. See bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type result struct {
	SyncMs      float64 `json:"syncMs"`
	Count       int     `json:"count"`
	MaxRssBytes int64   `json:"maxRssBytes"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "client-go-bench: "+format+"\n", args...)
	os.Exit(1)
}

// peakRssBytes is this process's peak resident set size: VmHWM from /proc/self/status.
// getrusage's ru_maxrss is not used on Linux because exec carries the parent's peak into it: a
// child of a 500 MiB Node process reports at least 500 MiB there, whatever it uses itself.
func peakRssBytes() int64 {
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		fail("getrusage: %v", err)
	}
	return usage.Maxrss * 1024
}

func main() {
	namespace := os.Getenv("BENCH_NAMESPACE")
	expected, err := strconv.Atoi(os.Getenv("BENCH_EXPECTED"))
	if namespace == "" || err != nil || expected < 0 {
		fail("BENCH_NAMESPACE and BENCH_EXPECTED (a count) must be set")
	}
	config, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fail("loading KUBECONFIG: %v", err)
	}
	// Like a controller would: no client-side throttling gets in the way of one LIST and one WATCH.
	config.QPS = 1000
	config.Burst = 1000
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail("creating client: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	started := time.Now()
	options := []informers.SharedInformerOption{informers.WithNamespace(namespace)}
	if os.Getenv("BENCH_LIST") == "quorum" {
		// The reflector's first list asks for resourceVersion "0" (the watch cache); only that list
		// has it, since a watch resumes from the list's version and a relist after a 410 has none.
		// Leaving it out makes the first list a quorum read like the other contenders'.
		options = append(options, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if o.ResourceVersion == "0" {
				o.ResourceVersion = ""
			}
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, options...)
	informer := factory.Core().V1().ConfigMaps().Informer()
	if os.Getenv("BENCH_MANAGED_FIELDS") == "drop" {
		// What Kanri does by default, as client-go users commonly do with a transform.
		if err := informer.SetTransform(func(obj any) (any, error) {
			if accessor, err := meta.Accessor(obj); err == nil {
				accessor.SetManagedFields(nil)
			}
			return obj, nil
		}); err != nil {
			fail("setting the transform: %v", err)
		}
	}
	factory.Start(ctx.Done())
	// factory.WaitForCacheSync polls HasSynced every 100 ms, which would round the sync time up
	// to the next 100 ms; poll the same condition every millisecond instead (it is O(1)), then
	// let WaitForCacheSync confirm it.
	for !informer.HasSynced() {
		if ctx.Err() != nil {
			fail("cache did not sync within the timeout")
		}
		time.Sleep(time.Millisecond)
	}
	synced := time.Since(started)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			fail("cache for %v did not sync", typ)
		}
	}
	store := informer.GetStore()
	// HasSynced means the initial list is in the store; anything created after it arrives by watch.
	for len(store.ListKeys()) < expected {
		if ctx.Err() != nil {
			fail("store holds %d of %d objects", len(store.ListKeys()), expected)
		}
		time.Sleep(10 * time.Millisecond)
		synced = time.Since(started)
	}
	syncMs := float64(synced.Microseconds()) / 1000
	count := len(store.ListKeys())

	maxRss := peakRssBytes()
	cancel()
	factory.Shutdown()

	line, _ := json.Marshal(result{SyncMs: syncMs, Count: count, MaxRssBytes: maxRss})
	fmt.Println(string(line))
}
