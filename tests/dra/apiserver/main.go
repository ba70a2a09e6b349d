// dra-apiserver: Kubernetes' apiextensions-apiserver (Debian's
// golang-k8s-apiextensions-apiserver-dev, its options and server unchanged) with the two
// things the DRA tests need that the stock binary delegates to a kube-apiserver it does
// not have (TokenReview, SubjectAccessReview):
//
//   - --token-auth-file: kube-apiserver's static token CSV (token,user,uid,"group,..."),
//     read again whenever the file changes, so that a test can rotate a client's token
//     mid-run as the kubelet rotates a projected service-account token: the new one is
//     added, clients move to it, the old one is removed;
//   - --authorization-rules-file: JSON {"users": {NAME: [rule]}, "groups": {NAME: [rule]}}
//     whose rules are rbac.authorization.k8s.io/v1 PolicyRules (a ClusterRole's rules
//     pasted as they are), matched as RBAC matches them (verbs, apiGroups, resources with
//     "res/subresource", resourceNames, nonResourceURLs with a trailing "*"), cluster-wide
//     only (no RoleBinding namespaces, no Node authorizer); system:masters may do anything
//     (the server's own loopback client is one). Read once at start.
//
// No admission plugins (no namespace lifecycle: objects may name any namespace), no
// priority and fairness, and conversion webhooks cannot be resolved (no Services here).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes/scheme"
	netutils "k8s.io/utils/net"
)

// tokens: the CSV file's authenticator, made again when the file's mtime or size changes.
type tokens struct {
	path  string
	mu    sync.Mutex
	mtime time.Time
	size  int64
	auth  *tokenfile.TokenAuthenticator
}

func (t *tokens) AuthenticateToken(ctx context.Context, tok string) (*authenticator.Response, bool, error) {
	t.mu.Lock()
	if fi, err := os.Stat(t.path); err == nil && (!fi.ModTime().Equal(t.mtime) || fi.Size() != t.size) {
		if a, err := tokenfile.NewCSV(t.path); err == nil {
			t.auth, t.mtime, t.size = a, fi.ModTime(), fi.Size()
			fmt.Fprintf(os.Stderr, "dra-apiserver: token file %s read again\n", t.path)
		} else {
			// Half written: the previous tokens stay until the file reads whole.
			fmt.Fprintf(os.Stderr, "dra-apiserver: token file %s: %v\n", t.path, err)
		}
	}
	a := t.auth
	t.mu.Unlock()
	if a == nil {
		return nil, false, nil
	}
	return a.AuthenticateToken(ctx, tok)
}

type rules struct {
	Users  map[string][]rbacv1.PolicyRule `json:"users"`
	Groups map[string][]rbacv1.PolicyRule `json:"groups"`
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == "*" || x == s {
			return true
		}
	}
	return false
}

func pathAllowed(urls []string, path string) bool {
	for _, u := range urls {
		if u == "*" || u == path || strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}

func allows(r rbacv1.PolicyRule, a authorizer.Attributes) bool {
	if !has(r.Verbs, a.GetVerb()) {
		return false
	}
	if !a.IsResourceRequest() {
		return pathAllowed(r.NonResourceURLs, a.GetPath())
	}
	res := a.GetResource()
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	if !has(r.APIGroups, a.GetAPIGroup()) || !has(r.Resources, res) {
		return false
	}
	// As RBAC: a rule with names never allows a request without one (list, watch, create).
	return len(r.ResourceNames) == 0 || a.GetName() != "" && has(r.ResourceNames, a.GetName())
}

func (r *rules) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := a.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "no user", nil
	}
	list := append([]rbacv1.PolicyRule{}, r.Users[u.GetName()]...)
	for _, g := range u.GetGroups() {
		list = append(list, r.Groups[g]...)
	}
	for _, rule := range list {
		if allows(rule, a) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "no rule allows it", nil
}

type noServices struct{}

func (noServices) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return nil, fmt.Errorf("service %s/%s: this server has no Services", namespace, name)
}

func config(o *options.CustomResourceDefinitionsServerOptions, tokenFile, rulesFile string) (*apiserver.Config, error) {
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, err
	}
	c := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	if err := o.ServerRunOptions.ApplyTo(&c.Config); err != nil {
		return nil, err
	}
	if err := o.RecommendedOptions.ApplyTo(c); err != nil {
		return nil, err
	}
	if err := o.APIEnablement.ApplyTo(&c.Config, apiserver.DefaultAPIResourceConfigSource(), apiserver.Scheme); err != nil {
		return nil, err
	}
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(
		openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions),
		openapinamer.NewDefinitionNamer(apiserver.Scheme, scheme.Scheme))

	t := &tokens{path: tokenFile}
	if _, err := tokenfile.NewCSV(tokenFile); err != nil {
		return nil, fmt.Errorf("--token-auth-file: %w", err)
	}
	c.Authentication.Authenticator = group.NewAuthenticatedGroupAdder(bearertoken.New(t))
	var r rules
	b, err := os.ReadFile(rulesFile)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return nil, fmt.Errorf("--authorization-rules-file: %w", err)
	}
	// Complete() adds the loopback client's token, in system:masters.
	c.Authorization.Authorizer = union.New(authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup), &r)

	return &apiserver.Config{
		GenericConfig: c,
		ExtraConfig: apiserver.ExtraConfig{
			CRDRESTOptionsGetter: options.NewCRDRESTOptionsGetter(*o.RecommendedOptions.Etcd, c.ResourceTransformers,
				c.StorageObjectCountTracker),
			ServiceResolver: noServices{},
			AuthResolverWrapper: webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, c.LoopbackClientConfig,
				noopoteltrace.NewTracerProvider()),
		},
	}, nil
}

func run() error {
	o := options.NewCustomResourceDefinitionsServerOptions(os.Stdout, os.Stderr)
	// What these delegate to a kube-apiserver this server does not have.
	o.RecommendedOptions.Authentication = nil
	o.RecommendedOptions.Authorization = nil
	o.RecommendedOptions.CoreAPI = nil
	o.RecommendedOptions.Admission = nil
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	fs := pflag.NewFlagSet("dra-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	tokenFile := fs.String("token-auth-file", "", "static token CSV, read again when it changes")
	rulesFile := fs.String("authorization-rules-file", "", "JSON of RBAC PolicyRules by user and group")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *tokenFile == "" || *rulesFile == "" {
		return fmt.Errorf("--token-auth-file and --authorization-rules-file are needed")
	}
	if err := o.ServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	if err := o.Complete(); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	c, err := config(o, *tokenFile, *rulesFile)
	if err != nil {
		return err
	}
	s, err := c.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	return s.GenericAPIServer.PrepareRun().RunWithContext(genericapiserver.SetupSignalContext())
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "dra-apiserver: %v\n", err)
		os.Exit(1)
	}
}
