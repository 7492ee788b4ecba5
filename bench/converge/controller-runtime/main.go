// Command controller-runtime-bench is the controller-runtime contender of `npm run bench:converge`:
// it reconciles every Item (bench.kanri.dev/v1) in BENCH_NAMESPACE to one owned ConfigMap with
// data.value = spec.value, and sets status.observedValue = spec.value through the status
// subresource. It runs until SIGTERM; the driver measures it from the outside. See bench/README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const fieldManager = "bench-controller-runtime"

var groupVersion = schema.GroupVersion{Group: "bench.kanri.dev", Version: "v1"}

// Item is a small hand-written Go type for the CRD in ../crd.yaml (no code generation).
type Item struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ItemSpec   `json:"spec,omitempty"`
	Status            ItemStatus `json:"status,omitempty"`
}

type ItemSpec struct {
	Value string `json:"value,omitempty"`
}

type ItemStatus struct {
	ObservedValue string `json:"observedValue,omitempty"`
}

// ItemList is the list type the informer needs.
type ItemList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Item `json:"items"`
}

func (in *Item) DeepCopyInto(out *Item) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

func (in *Item) DeepCopy() *Item {
	if in == nil {
		return nil
	}
	out := new(Item)
	in.DeepCopyInto(out)
	return out
}

func (in *Item) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *ItemList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(ItemList)
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Item, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// reconciler writes the owned ConfigMap (server-side apply) and the status (merge patch on the
// status subresource), each only when the cached state differs.
type reconciler struct {
	client.Client
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var item Item
	if err := r.Get(ctx, req.NamespacedName, &item); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	value := item.Spec.Value

	var cm corev1.ConfigMap
	err := r.Get(ctx, req.NamespacedName, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err != nil || cm.Data["value"] != value || !metav1.IsControlledBy(&cm, &item) {
		desired := corev1ac.ConfigMap(item.Name, item.Namespace).
			WithData(map[string]string{"value": value}).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion(groupVersion.String()).
				WithKind("Item").
				WithName(item.Name).
				WithUID(item.UID).
				WithController(true).
				WithBlockOwnerDeletion(true))
		if err := r.Apply(ctx, desired, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return ctrl.Result{}, err
		}
	}

	if item.Status.ObservedValue != value {
		patch := client.MergeFrom(item.DeepCopy())
		item.Status.ObservedValue = value
		if err := r.Status().Patch(ctx, &item, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "controller-runtime-bench: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	namespace := os.Getenv("BENCH_NAMESPACE")
	if namespace == "" {
		fail("BENCH_NAMESPACE must be set")
	}
	workers := 4
	if w := os.Getenv("BENCH_WORKERS"); w != "" {
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 {
			fail("BENCH_WORKERS must be a positive integer, not %q", w)
		}
		workers = n
	}

	// Info and errors to stderr (startup lines and failed reconciles); no per-reconcile logging.
	ctrl.SetLogger(funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, prefix, args)
	}, funcr.Options{}))

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fail("scheme: %v", err)
	}
	scheme.AddKnownTypes(groupVersion, &Item{}, &ItemList{})
	metav1.AddToGroupVersion(scheme, groupVersion)

	// ctrl.GetConfig reads KUBECONFIG; since v0.22 it leaves client-side rate limiting off (QPS -1)
	// and relies on the server's priority and fairness, so no QPS setting is needed.
	config, err := ctrl.GetConfig()
	if err != nil {
		fail("loading KUBECONFIG: %v", err)
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
	})
	if err != nil {
		fail("creating the manager: %v", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&Item{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(&reconciler{Client: mgr.GetClient()})
	if err != nil {
		fail("creating the controller: %v", err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fail("manager: %v", err)
	}
}
