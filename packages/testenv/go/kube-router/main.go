// Command kube-router-netpol runs kube-router's NetworkPolicy controller alone, as k3s embeds
// it: on one real node of testenv, in that node's network namespace, it turns the cluster's
// NetworkPolicies into iptables rules and ipsets for the Pods on that node. Routing and the
// service proxy are kube-router's other controllers, which testenv leaves to the CNI bridge and
// kube-proxy; so only the netpol package (and none of BGP, IPVS or the cloud SDKs) is built.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the controller's identity")
	hostname := flag.String("hostname-override", "", "the Node this controller enforces policies for")
	serviceRange := flag.String("service-cluster-ip-range", "", "the cluster's Service range")
	syncPeriod := flag.Duration("iptables-sync-period", 5*time.Minute, "full resync period (changes apply at once)")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*kubeconfig, *hostname, *serviceRange, *syncPeriod); err != nil {
		fmt.Fprintf(os.Stderr, "kube-router-netpol: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfig, hostname, serviceRange string, syncPeriod time.Duration) error {
	if kubeconfig == "" || hostname == "" || serviceRange == "" {
		return fmt.Errorf("--kubeconfig, --hostname-override and --service-cluster-ip-range are required")
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	config := options.NewKubeRouterConfig()
	config.HostnameOverride = hostname
	config.ClusterIPCIDRs = []string{serviceRange}
	config.EnableIPv4 = true
	config.RunFirewall = true
	config.IPTablesSyncPeriod = syncPeriod

	stop := make(chan struct{})
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-signals
		close(stop)
	}()
	// The controller reads its Node once, when created: started beside the kubelet, it waits for
	// the kubelet to register it.
	if err := waitForNode(client, hostname, stop); err != nil {
		return err
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	namespaces := factory.Core().V1().Namespaces().Informer()
	policies := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, pods.HasSynced, namespaces.HasSynced, policies.HasSynced) {
		return fmt.Errorf("the informers never synced")
	}

	iptablesHandlers, ipsetHandlers, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return err
	}
	controller, err := netpol.NewNetworkPolicyController(client, config, pods, policies, namespaces,
		&sync.Mutex{}, iptablesHandlers, ipsetHandlers)
	if err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(controller.PodEventHandler); err != nil {
		return err
	}
	if _, err := namespaces.AddEventHandler(controller.NamespaceEventHandler); err != nil {
		return err
	}
	if _, err := policies.AddEventHandler(controller.NetworkPolicyEventHandler); err != nil {
		return err
	}

	// The controller reports heartbeats to kube-router's health server, which is not run here:
	// drain them, or its sync would block on a full channel.
	heartbeats := make(chan *healthcheck.ControllerHeartbeat, 10)
	go func() {
		for range heartbeats {
		}
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go controller.Run(heartbeats, stop, &wg)

	<-stop
	wg.Wait()
	return nil
}

func waitForNode(client kubernetes.Interface, name string, stop <-chan struct{}) error {
	for {
		_, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			klog.Warningf("reading Node %s: %v", name, err)
		}
		select {
		case <-stop:
			return fmt.Errorf("stopped before Node %s was registered", name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
