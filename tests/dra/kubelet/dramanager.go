package main

// The kubelet's DRA manager (pkg/kubelet/cm/dra) as a plugin meets it: the registration
// handler takes the first service in the PLUGIN's supported_versions that this kubelet
// implements (-services), refuses a plugin that lists none; a call names the chosen
// service's methods with a timeout of its own (45 s) and is retried, as a failed pod sync
// is, after the backoff plus up to 50% jitter until -give-up has passed. An answer without
// the claim, or with an error for it, is a failed call, as it is for the kubelet.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

type plugin struct {
	Name          string   `json:"name"`
	Endpoint      string   `json:"endpoint"`
	Socket        string   `json:"socket"`
	Service       string   `json:"service"`
	Versions      []string `json:"supportedVersions"`
	Registered    bool     `json:"registered"`
	Registrations int      `json:"registrations"`
	conn          *grpc.ClientConn
}

type draManager struct {
	services    []string
	callTimeout time.Duration
	backoff     time.Duration
	giveUp      time.Duration
	dialTimeout time.Duration
	log         io.Writer

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each change of plugins
	plugins map[string]*plugin
}

func (dm *draManager) init() {
	if dm.plugins == nil {
		dm.plugins = map[string]*plugin{}
		dm.changed = make(chan struct{})
	}
}

// validate: the service this kubelet uses with a plugin that lists versions.
func (dm *draManager) validate(name string, versions []string) (string, error) {
	if name == "" {
		return "", errors.New("the plugin has no name")
	}
	if len(versions) == 0 {
		return "", errors.New("empty list of supported versions")
	}
	for _, v := range versions {
		if slices.Contains(dm.services, v) {
			return v, nil
		}
	}
	return "", fmt.Errorf("none of the supported services %v is implemented by kubelet (supported: %v)", versions, dm.services)
}

// register: the plugin's DRA endpoint dialled, the plugin (a new one of that name replacing
// the one before) registered.
func (dm *draManager) register(name, endpoint, socket, service string, versions []string) error {
	conn, err := dial(endpoint, dm.dialTimeout)
	if err != nil {
		return fmt.Errorf("the DRA endpoint: %w", err)
	}
	dm.mu.Lock()
	defer dm.mu.Unlock()
	dm.init()
	n := 0
	if old := dm.plugins[name]; old != nil {
		n = old.Registrations
		if old.conn != nil {
			old.conn.Close()
		}
	}
	dm.plugins[name] = &plugin{Name: name, Endpoint: endpoint, Socket: socket, Service: service,
		Versions: versions, Registered: true, Registrations: n + 1, conn: conn}
	dm.notifyLocked()
	return nil
}

// deregister: the plugin registered through socket (if it still is) forgotten.
func (dm *draManager) deregister(name, socket string) {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	dm.init()
	p := dm.plugins[name]
	if p == nil || p.Socket != socket || !p.Registered {
		return
	}
	p.Registered = false
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
	fmt.Fprintf(dm.log, "kubelet-standin: deregistered plugin %s (%s removed)\n", name, socket)
	dm.notifyLocked()
}

func (dm *draManager) notifyLocked() {
	close(dm.changed)
	dm.changed = make(chan struct{})
}

func (dm *draManager) closeAll() {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	for _, p := range dm.plugins {
		if p.conn != nil {
			p.conn.Close()
		}
	}
}

// list: the plugins known (registered or not) and a channel closed at the next change.
func (dm *draManager) list() ([]plugin, <-chan struct{}) {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	dm.init()
	out := make([]plugin, 0, len(dm.plugins))
	for _, p := range dm.plugins {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b plugin) int { return strings.Compare(a.Name, b.Name) })
	return out, dm.changed
}

// pick: the registered plugin named driver, or the only one registered when driver is empty.
func (dm *draManager) pick(driver string) (*grpc.ClientConn, string, string, error) {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	dm.init()
	var found *plugin
	for _, p := range dm.plugins {
		if !p.Registered || driver != "" && p.Name != driver {
			continue
		}
		if found != nil {
			return nil, "", "", errors.New("several plugins are registered: name one (-driver)")
		}
		found = p
	}
	if found == nil {
		if driver == "" {
			return nil, "", "", errors.New("no DRA plugin is registered")
		}
		return nil, "", "", fmt.Errorf("DRA driver %s is not registered", driver)
	}
	return found.conn, found.Name, found.Service, nil
}

// method: the full gRPC method name of a call on service "VERSION.DRAPlugin".
func method(service, call string) string {
	return "/k8s.io.kubelet.pkg.apis.dra." + strings.TrimSuffix(service, ".DRAPlugin") + ".DRAPlugin/" + call
}

type device struct {
	RequestNames []string `json:"requestNames"`
	PoolName     string   `json:"poolName"`
	DeviceName   string   `json:"deviceName"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
}

type callResult struct {
	OK       bool     `json:"ok"`
	Op       string   `json:"op"`
	Claim    claimRef `json:"claim"`
	Driver   string   `json:"driver,omitempty"`
	Service  string   `json:"service,omitempty"`
	Attempts int      `json:"attempts"`
	Devices  []device `json:"devices,omitempty"`
	Error    string   `json:"error,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	Seconds  float64  `json:"seconds"`
}

// call: prepare or unprepare one claim, retried until it succeeds or give-up has passed.
func (dm *draManager) call(op string, claim claimRef, driver string) callResult {
	res := callResult{Op: op, Claim: claim}
	start := time.Now()
	for {
		res.Attempts++
		err := dm.callOnce(op, claim, driver, &res)
		if err == nil {
			res.OK = true
			break
		}
		msg := fmt.Sprintf("attempt %d: %v", res.Attempts, err)
		res.Errors = append(res.Errors, msg)
		fmt.Fprintf(dm.log, "kubelet-standin: %s %s: %s\n", op, claim.UID, msg)
		wait := dm.backoff + time.Duration(rand.Float64()*backoffJitter*float64(dm.backoff))
		if time.Since(start)+wait > dm.giveUp {
			res.Error = fmt.Sprintf("gave up after %d attempts: %v", res.Attempts, err)
			break
		}
		time.Sleep(wait)
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

func (dm *draManager) callOnce(op string, claim claimRef, driver string, res *callResult) error {
	conn, name, service, err := dm.pick(driver)
	if err != nil {
		return err
	}
	res.Driver, res.Service = name, service
	pbClaim := &drapb.Claim{Namespace: claim.Namespace, UID: claim.UID, Name: claim.Name}
	ctx, cancel := context.WithTimeout(context.Background(), dm.callTimeout)
	defer cancel()
	if op == "prepare" {
		out := &drapb.NodePrepareResourcesResponse{}
		in := &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{pbClaim}}
		if err := conn.Invoke(ctx, method(service, "NodePrepareResources"), in, out); err != nil {
			return fmt.Errorf("NodePrepareResources: %w", err)
		}
		r, err := claimResult("NodePrepareResources", out.Claims, claim.UID)
		if err != nil {
			return err
		}
		res.Devices = nil
		for _, d := range r.Devices {
			if d == nil {
				return fmt.Errorf("NodePrepareResources: claim %s: a null device", claim.UID)
			}
			res.Devices = append(res.Devices, device{RequestNames: d.RequestNames, PoolName: d.PoolName,
				DeviceName: d.DeviceName, CDIDeviceIDs: d.CDIDeviceIDs})
		}
		return nil
	}
	out := &drapb.NodeUnprepareResourcesResponse{}
	in := &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{pbClaim}}
	if err := conn.Invoke(ctx, method(service, "NodeUnprepareResources"), in, out); err != nil {
		return fmt.Errorf("NodeUnprepareResources: %w", err)
	}
	_, err = claimResult("NodeUnprepareResources", out.Claims, claim.UID)
	return err
}

// claimResult: the answer's result for the claim, an error when it has none or it says one.
func claimResult[T any, P interface {
	*T
	GetError() string
}](call string, results map[string]P, uid string) (P, error) {
	r := results[uid]
	if r == nil {
		return nil, fmt.Errorf("%s: the answer has no result for claim %s", call, uid)
	}
	if msg := r.GetError(); msg != "" {
		return nil, fmt.Errorf("%s: claim %s: %s", call, uid, msg)
	}
	return r, nil
}
