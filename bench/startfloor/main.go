// Command startfloor is the floor of a Kubernetes command-line tool's
// start-up, to measure lockctl's against: it loads the kubeconfig as
// client-go's tools do (KUBECONFIG, else ~/.kube/config, its current
// context), builds client-go's transport from it (TLS, credentials) and GETs
// one ConfigMap into the API type, printing its name and resourceVersion.
// It uses client-go's clientcmd and rest and nothing more: no clientset,
// whose scheme registers every API group, so anything a real command does
// beyond it is that command's own cost.
//
//	startfloor NAMESPACE NAME
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
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
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + url.PathEscape(namespace) + "/configmaps/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(body, &cm); err != nil {
		return err
	}
	fmt.Println(cm.Name, cm.ResourceVersion)
	return nil
}
