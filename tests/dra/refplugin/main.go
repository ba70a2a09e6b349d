// dra-refplugin: a small DRA plugin of our own, independent of cachepin's, for testing the
// kubelet stand-in (tests/dra/kubelet) against: the registration service on
// ROOT/plugins_registry/NAME-reg.sock, the DRA service on ROOT/plugins/NAME/dra.sock.
//
//	dra-refplugin -root DIR [-name NAME] [-services v1.DRAPlugin,v1beta1.DRAPlugin]
//	        [-stall N] [-fail N] [-garbage]
//
// It advertises -services in GetInfo's supported_versions, in that order, and serves those
// it knows (v1 and v1beta1: the same messages, Debian's k8s.io/kubelet has the v1beta1
// ones). NodePrepareResources answers each claim with one device, pool "ref", device
// "dev-0", CDI id NAME/claim=UID; NodeUnprepareResources answers each claim without error.
// -stall N: the first N prepare calls answer only when the caller gives up (its deadline);
// -fail N: the first N prepare calls answer the claim with an error (-1: all);
// -garbage: every DRA call is answered with bytes that are not the message.
// Each call and registration status is logged on stderr, one line:
//
//	call /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources claims=UID,...
//	registration status: registered=true error=""
//
// The sockets are removed at SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type refPlugin struct {
	name     string
	services []string
	endpoint string
	garbage  bool

	mu    sync.Mutex
	stall int
	fail  int
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dra-refplugin: "+format+"\n", args...)
}

func (p *refPlugin) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	logf("GetInfo")
	return &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: p.name, Endpoint: p.endpoint,
		SupportedVersions: p.services}, nil
}

func (p *refPlugin) NotifyRegistrationStatus(ctx context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	logf("registration status: registered=%t error=%q", s.PluginRegistered, s.Error)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func claimUIDs(claims []*drapb.Claim) string {
	uids := make([]string, 0, len(claims))
	for _, c := range claims {
		uids = append(uids, c.UID)
	}
	return strings.Join(uids, ",")
}

// take: whether this call is one of the first n (n < 0: all of them).
func take(n *int) bool {
	if *n == 0 {
		return false
	}
	if *n > 0 {
		*n--
	}
	return true
}

func (p *refPlugin) prepare(ctx context.Context, method string, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	logf("call %s claims=%s", method, claimUIDs(req.Claims))
	p.mu.Lock()
	stall, fail := take(&p.stall), false
	if !stall {
		fail = take(&p.fail)
	}
	p.mu.Unlock()
	if stall {
		<-ctx.Done()
		logf("stalled call given up by the caller: %v", ctx.Err())
		return nil, ctx.Err()
	}
	out := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.Claims {
		if fail {
			out.Claims[c.UID] = &drapb.NodePrepareResourceResponse{Error: "told to fail"}
			continue
		}
		out.Claims[c.UID] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{
			RequestNames: []string{"req-0"}, PoolName: "ref", DeviceName: "dev-0",
			CDIDeviceIDs: []string{p.name + "/claim=" + c.UID},
		}}}
	}
	return out, nil
}

func (p *refPlugin) unprepare(ctx context.Context, method string, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	logf("call %s claims=%s", method, claimUIDs(req.Claims))
	out := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range req.Claims {
		out.Claims[c.UID] = &drapb.NodeUnprepareResourceResponse{}
	}
	return out, nil
}

// draService: the DRAPlugin service of API version v ("v1", "v1beta1") on p.
func draService(v string) *grpc.ServiceDesc {
	name := "k8s.io.kubelet.pkg.apis.dra." + v + ".DRAPlugin"
	return &grpc.ServiceDesc{
		ServiceName: name,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "NodePrepareResources", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := &drapb.NodePrepareResourcesRequest{}
				if err := dec(in); err != nil {
					return nil, err
				}
				return srv.(*refPlugin).prepare(ctx, "/"+name+"/NodePrepareResources", in)
			}},
			{MethodName: "NodeUnprepareResources", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := &drapb.NodeUnprepareResourcesRequest{}
				if err := dec(in); err != nil {
					return nil, err
				}
				return srv.(*refPlugin).unprepare(ctx, "/"+name+"/NodeUnprepareResources", in)
			}},
		},
		Metadata: "api.proto",
	}
}

// rawCodec: messages as the bytes they are, for -garbage.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// garbage: field 1 (claims) with a length past the end of the message.
var garbage = []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x02}

func garbageServer() *grpc.Server {
	return grpc.NewServer(grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			var in []byte
			if err := stream.RecvMsg(&in); err != nil {
				return err
			}
			m, _ := grpc.MethodFromServerStream(stream)
			logf("call %s answered with garbage", m)
			out := append([]byte(nil), garbage...)
			return stream.SendMsg(&out)
		}))
}

func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func main() {
	root := flag.String("root", "", "the kubelet's directory")
	name := flag.String("name", "ref.cachepin.test", "the driver's name")
	services := flag.String("services", "v1.DRAPlugin,v1beta1.DRAPlugin", "supported_versions, in order")
	stall := flag.Int("stall", 0, "the first N prepare calls stall until the caller's deadline")
	fail := flag.Int("fail", 0, "the first N prepare calls fail (-1: all)")
	garb := flag.Bool("garbage", false, "answer DRA calls with garbage")
	flag.Parse()
	if *root == "" || flag.NArg() > 0 || *name == "" || strings.ContainsAny(*name, "/ ") {
		fmt.Fprintln(os.Stderr, "usage: dra-refplugin -root DIR [-name NAME] [-services LIST] [-stall N] [-fail N] [-garbage]")
		os.Exit(2)
	}
	p := &refPlugin{name: *name, services: strings.Split(*services, ","), garbage: *garb, stall: *stall, fail: *fail,
		endpoint: filepath.Join(*root, "plugins", *name, "dra.sock")}
	regPath := filepath.Join(*root, "plugins_registry", *name+"-reg.sock")

	var dra *grpc.Server
	if p.garbage {
		dra = garbageServer()
	} else {
		dra = grpc.NewServer()
		for _, s := range p.services {
			if v, ok := strings.CutSuffix(s, ".DRAPlugin"); ok && (v == "v1" || v == "v1beta1") {
				dra.RegisterService(draService(v), p)
			}
		}
	}
	draLn, err := listen(p.endpoint)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	go dra.Serve(draLn)

	reg := grpc.NewServer()
	registerapi.RegisterRegistrationServer(reg, p)
	regLn, err := listen(regPath)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	go reg.Serve(regLn)
	logf("serving %s (registration) and %s (DRA, %s)", regPath, p.endpoint, *services)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	reg.Stop()
	dra.Stop()
	os.Remove(regPath)
	os.Remove(p.endpoint)
}
