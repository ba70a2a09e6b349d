package main

// The kubelet's plugin manager (pkg/kubelet/pluginmanager) as a DRA plugin meets it: a
// socket that appears in plugins_registry (names starting with "." and files that are not
// sockets ignored) is dialled, GetInfo tells its type, name, endpoint and supported
// versions, the handler of that type validates and registers it, and
// NotifyRegistrationStatus tells the plugin the outcome. A failed registration is tried
// again with the kubelet's exponential backoff (500 ms doubling up to 2 min 2 s); a socket
// replaced by another (a restarted plugin) is registered again; a socket removed is
// deregistered. The kubelet learns of sockets through inotify and registers from a
// reconciler loop; here the directory is read every 100 ms, which finds the same sockets.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const (
	scanInterval     = 100 * time.Millisecond
	retryInitial     = 500 * time.Millisecond
	retryMax         = 2*time.Minute + 2*time.Second
	socketStateOK    = "registered"
	socketStateError = "failed"
	socketStateNew   = "registering"
)

// socketID: a socket file's identity; another file at the same path is another plugin.
type socketID struct {
	dev, ino uint64
	ctime    int64
}

type socketState struct {
	Path     string `json:"path"`
	State    string `json:"state"`
	Plugin   string `json:"plugin,omitempty"`
	Error    string `json:"error,omitempty"`
	Attempts int    `json:"attempts"`
	id       socketID
	next     time.Time
	delay    time.Duration
	busy     bool
}

type pluginManager struct {
	dir     string
	dm      *draManager
	log     io.Writer
	mu      sync.Mutex
	sockets map[string]*socketState
}

func newPluginManager(dir string, dm *draManager, log io.Writer) *pluginManager {
	return &pluginManager{dir: dir, dm: dm, log: log, sockets: map[string]*socketState{}}
}

func (pm *pluginManager) run(stop <-chan struct{}) {
	t := time.NewTicker(scanInterval)
	defer t.Stop()
	for {
		pm.scan()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// scan: the sockets now in the directory against those known.
func (pm *pluginManager) scan() {
	found := map[string]socketID{}
	entries, err := os.ReadDir(pm.dir)
	if err != nil {
		fmt.Fprintf(pm.log, "kubelet-standin: %v\n", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(pm.dir, e.Name())
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			continue
		}
		found[path] = socketID{dev: uint64(st.Dev), ino: st.Ino, ctime: st.Ctim.Nano()}
	}
	now := time.Now()
	pm.mu.Lock()
	defer pm.mu.Unlock()
	for path, s := range pm.sockets {
		if id, ok := found[path]; (!ok || id != s.id) && !s.busy {
			delete(pm.sockets, path)
			if s.State == socketStateOK {
				pm.dm.deregister(s.Plugin, path)
			}
		}
	}
	for path, id := range found {
		s := pm.sockets[path]
		if s == nil {
			s = &socketState{Path: path, State: socketStateNew, id: id, delay: retryInitial}
			pm.sockets[path] = s
		}
		if s.busy || s.State == socketStateOK || now.Before(s.next) {
			continue
		}
		s.busy = true
		s.Attempts++
		go pm.register(s)
	}
}

// register: one registration of the plugin behind socket s, as the kubelet's
// operation generator does it.
func (pm *pluginManager) register(s *socketState) {
	name, err := pm.registerOnce(s.Path)
	pm.mu.Lock()
	defer pm.mu.Unlock()
	s.busy = false
	s.Plugin = name
	if err != nil {
		s.State, s.Error = socketStateError, err.Error()
		s.next = time.Now().Add(s.delay)
		s.delay = min(2*s.delay, retryMax)
		fmt.Fprintf(pm.log, "kubelet-standin: registration of %s failed (attempt %d): %v\n", s.Path, s.Attempts, err)
		return
	}
	s.State, s.Error = socketStateOK, ""
}

func (pm *pluginManager) registerOnce(path string) (string, error) {
	conn, err := dial(path, pm.dm.dialTimeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), getInfoTimeout)
	info, err := client.GetInfo(ctx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return "", fmt.Errorf("GetInfo: %w", err)
	}
	if info.Type != registerapi.DRAPlugin {
		msg := fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.Type, path)
		return info.Name, notify(client, false, msg)
	}
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = path
	}
	service, err := pm.dm.validate(info.Name, info.SupportedVersions)
	if err != nil {
		msg := fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: %v", err)
		return info.Name, notify(client, false, msg)
	}
	if err := pm.dm.register(info.Name, endpoint, path, service, info.SupportedVersions); err != nil {
		return info.Name, notify(client, false, fmt.Sprintf("RegisterPlugin error -- %v", err))
	}
	if err := notify(client, true, ""); err != nil {
		pm.dm.deregister(info.Name, path)
		return info.Name, err
	}
	fmt.Fprintf(pm.log, "kubelet-standin: registered plugin %s (service %s, endpoint %s)\n", info.Name, service, endpoint)
	return info.Name, nil
}

// notify: NotifyRegistrationStatus; a refused registration is an error either way.
func notify(client registerapi.RegistrationClient, ok bool, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	_, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: ok, Error: msg})
	switch {
	case err != nil && ok:
		return fmt.Errorf("RegisterPlugin error -- failed to send registration status: %w", err)
	case err != nil:
		return fmt.Errorf("%s (and NotifyRegistrationStatus: %v)", msg, err)
	case !ok:
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// dial: a connection to a unix socket, ready within timeout (the kubelet's blocking dial).
func dial(path string, timeout time.Duration) (*grpc.ClientConn, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("unix://"+abs, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return conn, nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			conn.Close()
			return nil, fmt.Errorf("dial %s: not ready after %s (state %s)", path, timeout, s)
		}
	}
}

func (pm *pluginManager) snapshot() []socketState {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	out := make([]socketState, 0, len(pm.sockets))
	for _, s := range pm.sockets {
		out = append(out, *s)
	}
	return out
}
