// legacy-discovery: a legacy (unaggregated) discovery client for the e2e tests.
//
// Go is used here only to build a real third-party client: client-go's own
// discovery client in legacy mode (WithLegacy: /api, /apis, then every
// /api/v1 and /apis/{g}/{v}), so the tests check what such a client concludes
// from a sidecar, not what our TypeScript thinks it would. It is built into
// the install cache (src/tools/install/legacyDiscoveryClient.ts), never here.
//
// It prints one JSON object on stdout: the groups and resources
// ServerGroupsAndResources returned, its error (with the failed group versions
// of an ErrGroupDiscoveryFailed), and every response it read (path, status,
// content type). It exits 0 when discovery fails, since the error is part of
// the answer; non-zero only when it cannot run at all.
//
// client-go v0.37 asks /api and /apis for JSON in legacy mode whatever the
// config accepts, so -protobuf also reads those two documents itself through
// the same client with a protobuf Accept and decodes them with client-go's
// decoder, as clients from before aggregated discovery did.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

const clientGoModule = "k8s.io/client-go"

const protobufAccept = "application/vnd.kubernetes.protobuf,application/json"

type group struct {
	Name             string   `json:"name"`
	Versions         []string `json:"versions"`
	PreferredVersion string   `json:"preferredVersion"`
}

type resource struct {
	// Name is `resource` or `resource/subresource`.
	Name  string   `json:"name"`
	Verbs []string `json:"verbs"`
}

type resourceList struct {
	GroupVersion string     `json:"groupVersion"`
	Resources    []resource `json:"resources"`
}

type response struct {
	Path        string `json:"path"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
}

// protobufDocuments are /api and /apis as read in protobuf (-protobuf only).
type protobufDocuments struct {
	APIContentType  string   `json:"apiContentType"`
	CoreVersions    []string `json:"coreVersions"`
	APISContentType string   `json:"apisContentType"`
	Groups          []group  `json:"groups"`
	Error           string   `json:"error,omitempty"`
}

type report struct {
	ClientGo            string             `json:"clientGo"`
	Protobuf            bool               `json:"protobuf"`
	Groups              []group            `json:"groups"`
	Resources           []resourceList     `json:"resources"`
	Error               string             `json:"error,omitempty"`
	FailedGroupVersions map[string]string  `json:"failedGroupVersions,omitempty"`
	ProtobufDocuments   *protobufDocuments `json:"protobufDocuments,omitempty"`
	Responses           []response         `json:"responses"`
	Millis              int64              `json:"millis"`
}

// recorder notes every response the client reads.
type recorder struct {
	next      http.RoundTripper
	mu        sync.Mutex
	responses []response
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.next.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.responses = append(r.responses, response{Path: req.URL.Path, Status: res.StatusCode, ContentType: res.Header.Get("Content-Type")})
		r.mu.Unlock()
	}
	return res, err
}

func clientGoVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == clientGoModule {
			return dep.Version
		}
	}
	return "unknown"
}

func groupOf(g *metav1.APIGroup) group {
	out := group{Name: g.Name, Versions: []string{}, PreferredVersion: g.PreferredVersion.Version}
	for _, v := range g.Versions {
		out.Versions = append(out.Versions, v.Version)
	}
	return out
}

func readProtobufDocuments(ctx context.Context, client *discovery.DiscoveryClient) *protobufDocuments {
	docs := &protobufDocuments{CoreVersions: []string{}, Groups: []group{}}
	versions := &metav1.APIVersions{}
	err := client.RESTClient().Get().AbsPath("/api").SetHeader("Accept", protobufAccept).Do(ctx).ContentType(&docs.APIContentType).Into(versions)
	if err != nil {
		docs.Error = fmt.Sprintf("/api: %v", err)
		return docs
	}
	docs.CoreVersions = append(docs.CoreVersions, versions.Versions...)
	groups := &metav1.APIGroupList{}
	err = client.RESTClient().Get().AbsPath("/apis").SetHeader("Accept", protobufAccept).Do(ctx).ContentType(&docs.APISContentType).Into(groups)
	if err != nil {
		docs.Error = fmt.Sprintf("/apis: %v", err)
		return docs
	}
	for i := range groups.Groups {
		docs.Groups = append(docs.Groups, groupOf(&groups.Groups[i]))
	}
	return docs
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server to discover (required)")
	protobuf := flag.Bool("protobuf", false, "accept protobuf (then JSON), as clients configured for protobuf do")
	version := flag.Bool("version", false, "print the client-go version this was built with and exit")
	flag.Parse()
	if *version {
		fmt.Printf("legacy-discovery client-go %s\n", clientGoVersion())
		return nil
	}
	if *kubeconfig == "" {
		return errors.New("-kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	if *protobuf {
		cfg.AcceptContentTypes = protobufAccept
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
	}
	rec := &recorder{}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		rec.next = next
		return rec
	})
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	started := time.Now()
	groups, lists, discoveryErr := client.WithLegacy().ServerGroupsAndResources()
	out := report{ClientGo: clientGoVersion(), Protobuf: *protobuf, Groups: []group{}, Resources: []resourceList{}}
	for _, g := range groups {
		out.Groups = append(out.Groups, groupOf(g))
	}
	for _, l := range lists {
		entries := []resource{}
		for _, r := range l.APIResources {
			entries = append(entries, resource{Name: r.Name, Verbs: append([]string{}, r.Verbs...)})
		}
		out.Resources = append(out.Resources, resourceList{GroupVersion: l.GroupVersion, Resources: entries})
	}
	if discoveryErr != nil {
		out.Error = discoveryErr.Error()
		if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(discoveryErr); ok {
			out.FailedGroupVersions = map[string]string{}
			for gv, e := range failed {
				out.FailedGroupVersions[gv.String()] = e.Error()
			}
		}
	}
	if *protobuf {
		out.ProtobufDocuments = readProtobufDocuments(ctx, client)
	}
	out.Millis = time.Since(started).Milliseconds()
	rec.mu.Lock()
	out.Responses = append([]response{}, rec.responses...)
	rec.mu.Unlock()
	sort.SliceStable(out.Responses, func(i, j int) bool { return out.Responses[i].Path < out.Responses[j].Path })
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(out)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "legacy-discovery: %v\n", err)
		os.Exit(2)
	}
}
