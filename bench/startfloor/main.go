// Command startfloor is the floor of a Kubernetes command-line tool's
// start-up, to measure lockctl's against: it loads the kubeconfig as
// client-go's tools do (KUBECONFIG, else ~/.kube/config, current context),
// builds a clientset and GETs one ConfigMap, printing its name and
// resourceVersion. Anything a real command does beyond that is its own cost.
//
//	startfloor NAMESPACE NAME
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: startfloor NAMESPACE NAME")
		os.Exit(2)
	}
	if err := get(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func get(namespace, name string) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Println(cm.Name, cm.ResourceVersion)
	return nil
}
