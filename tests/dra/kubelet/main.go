// kubelet-standin: the parts of the kubelet that a DRA driver talks to, for cachepin's
// tests (issue 34): the plugin manager (plugin registration over
// DIR/plugins_registry/*.sock, pluginmanager.go) and the DRA manager's calls
// (NodePrepareResources and NodeUnprepareResources with the kubelet's timeouts and
// retries, dramanager.go), driven through a control socket (control.go).
//
//	kubelet-standin serve -root DIR -ctl SOCK [-services v1.DRAPlugin,v1beta1.DRAPlugin]
//	        [-call-timeout 45s] [-backoff 10s] [-give-up 2m] [-dial-timeout 10s]
//	kubelet-standin wait -ctl SOCK [-driver NAME] [-registrations N] [-gone] [-timeout 60s]
//	kubelet-standin prepare -ctl SOCK -claim UID/NS/NAME [-driver NAME]
//	kubelet-standin unprepare -ctl SOCK -claim UID/NS/NAME [-driver NAME]
//	kubelet-standin plugins -ctl SOCK
//
// The client commands print the answer, one JSON line. Exit status: 0 ok; 1 the call
// failed (the answer says why) or the control socket cannot be reached; 2 usage.
//
// Built from Debian's k8s.io/kubelet API package, which has dra/v1beta1 and no dra/v1:
// the v1 service's messages are the v1beta1 ones (the same wire shape, only the package
// in the method name differs), so a call to v1.DRAPlugin sends v1beta1 messages to the
// v1 method names, as a kubelet built with dra/v1 would send its own.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: kubelet-standin serve -root DIR -ctl SOCK [-services LIST] [-call-timeout D] [-backoff D] [-give-up D] [-dial-timeout D]
       kubelet-standin wait -ctl SOCK [-driver NAME] [-registrations N] [-gone] [-timeout D]
       kubelet-standin prepare|unprepare -ctl SOCK -claim UID/NS/NAME [-driver NAME]
       kubelet-standin plugins -ctl SOCK
`

// The kubelet's numbers (pkg/kubelet/pluginmanager/operationexecutor and
// pkg/kubelet/cm/dra): dial 10 s, GetInfo 1 s, NotifyRegistrationStatus 5 s, a DRA call
// 45 s; a failed pod sync is retried after 10 s with up to 50% jitter.
const (
	defaultDialTimeout   = 10 * time.Second
	getInfoTimeout       = time.Second
	notifyTimeout        = 5 * time.Second
	defaultCallTimeout   = 45 * time.Second
	defaultBackoff       = 10 * time.Second
	backoffJitter        = 0.5
	defaultGiveUp        = 2 * time.Minute
	defaultWaitTimeout   = 60 * time.Second
	registryDirName      = "plugins_registry"
	kubeletServicesValue = "v1.DRAPlugin,v1beta1.DRAPlugin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	ctl := fs.String("ctl", "", "the control socket")
	switch cmd {
	case "serve":
		root := fs.String("root", "", "the kubelet's directory (DIR/plugins_registry is watched)")
		services := fs.String("services", kubeletServicesValue, "the DRA services this kubelet implements")
		callTimeout := fs.Duration("call-timeout", defaultCallTimeout, "the timeout of one DRA call")
		backoff := fs.Duration("backoff", defaultBackoff, "the wait before a failed call is retried (plus up to 50%)")
		giveUp := fs.Duration("give-up", defaultGiveUp, "no retry starts after this long")
		dialTimeout := fs.Duration("dial-timeout", defaultDialTimeout, "the timeout of a dial")
		if err := parse(fs, rest, stderr); err != nil {
			return 2
		}
		if *root == "" || *ctl == "" {
			fmt.Fprintln(stderr, "kubelet-standin serve: -root and -ctl are required")
			return 2
		}
		svc, err := parseServices(*services)
		if err != nil {
			fmt.Fprintf(stderr, "kubelet-standin serve: -services: %v\n", err)
			return 2
		}
		for name, d := range map[string]time.Duration{"call-timeout": *callTimeout, "backoff": *backoff, "give-up": *giveUp, "dial-timeout": *dialTimeout} {
			if d <= 0 {
				fmt.Fprintf(stderr, "kubelet-standin serve: -%s: must be positive\n", name)
				return 2
			}
		}
		return serve(*root, *ctl, &draManager{
			services: svc, callTimeout: *callTimeout, backoff: *backoff, giveUp: *giveUp,
			dialTimeout: *dialTimeout, log: stderr,
		}, stderr)
	case "wait":
		driver := fs.String("driver", "", "the plugin's name (any plugin when empty)")
		regs := fs.Int("registrations", 1, "wait for this many registrations of it since the start")
		gone := fs.Bool("gone", false, "wait until no plugin of that name is registered")
		timeout := fs.Duration("timeout", defaultWaitTimeout, "give up after this long")
		if err := parse(fs, rest, stderr); err != nil || *ctl == "" || *regs < 0 || *timeout <= 0 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return client(*ctl, request{Op: "wait", Driver: *driver, Registrations: *regs, Gone: *gone, Timeout: timeout.String()}, stdout, stderr)
	case "prepare", "unprepare":
		claim := fs.String("claim", "", "UID/NAMESPACE/NAME")
		driver := fs.String("driver", "", "the plugin's name (the one registered when empty)")
		if err := parse(fs, rest, stderr); err != nil || *ctl == "" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		if _, err := parseClaim(*claim); err != nil {
			fmt.Fprintf(stderr, "kubelet-standin %s: -claim: %v\n", cmd, err)
			return 2
		}
		return client(*ctl, request{Op: cmd, Claim: *claim, Driver: *driver}, stdout, stderr)
	case "plugins":
		if err := parse(fs, rest, stderr); err != nil || *ctl == "" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return client(*ctl, request{Op: "plugins"}, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "kubelet-standin: unknown command %q\n%s", cmd, usage)
		return 2
	}
}

func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kubelet-standin %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return fmt.Errorf("arguments")
	}
	return nil
}

// parseServices: the comma-separated DRA services a kubelet implements, each
// "VERSION.DRAPlugin" with a version of the API package's form (v1, v1beta1).
func parseServices(s string) ([]string, error) {
	var out []string
	for _, svc := range strings.Split(s, ",") {
		v, ok := strings.CutSuffix(svc, ".DRAPlugin")
		if !ok || v == "" || !validVersion(v) {
			return nil, fmt.Errorf("%q is not VERSION.DRAPlugin", svc)
		}
		out = append(out, svc)
	}
	return out, nil
}

func validVersion(v string) bool {
	if len(v) < 2 || v[0] != 'v' {
		return false
	}
	for _, c := range v[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

type claimRef struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func parseClaim(s string) (claimRef, error) {
	p := strings.Split(s, "/")
	if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
		return claimRef{}, fmt.Errorf("%q is not UID/NAMESPACE/NAME", s)
	}
	return claimRef{UID: p[0], Namespace: p[1], Name: p[2]}, nil
}

// serve: the plugin manager and the control socket until SIGTERM or SIGINT.
func serve(root, ctl string, dm *draManager, stderr io.Writer) int {
	reg := root + "/" + registryDirName
	if err := os.MkdirAll(reg, 0o750); err != nil {
		fmt.Fprintf(stderr, "kubelet-standin: %v\n", err)
		return 1
	}
	ln, err := listenControl(ctl)
	if err != nil {
		fmt.Fprintf(stderr, "kubelet-standin: control socket: %v\n", err)
		return 1
	}
	pm := newPluginManager(reg, dm, stderr)
	stop := make(chan struct{})
	go pm.run(stop)
	go serveControl(ln, dm, pm)
	fmt.Fprintf(stderr, "kubelet-standin: watching %s, control %s, services %s\n", reg, ctl, strings.Join(dm.services, ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	close(stop)
	ln.Close()
	os.Remove(ctl)
	dm.closeAll()
	return 0
}
