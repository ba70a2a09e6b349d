#!/usr/bin/python3
"""A CRI client of cachepin's own, driving a runtime as the kubelet does.

Its stubs are generated from k8s.io/cri-api's runtime/v1 api.proto (Debian's
golang-github-kubernetes-cri-api-dev) by containerd.sh into a build directory named by
CRI_STUBS; nothing generated is committed. Only the calls the tests make are here.

    CRI_STUBS=DIR cri_client.py --socket SOCK COMMAND [ARGS]
    CRI_STUBS=DIR cri_client.py --socket SOCK --serve

Commands print their result (an id, a state, a command's stdout) and exit 1 with a
message on stderr on an RPC error. --serve reads commands, one a line (words separated
as the shell does), and answers each with its output and then a line `.END STATUS`: one
process for a whole test (starting Python and gRPC takes a second on a busy machine).

    version
    run-pod NAME CGROUP_PARENT HANDLER [KEY=VALUE...]   host network; prints the sandbox id
    create POD_ID NAME IMAGE CGROUP_PARENT POD_NAME [KEY=VALUE...] [pod:KEY=VALUE...]
                                                    prints the container id; pod: keys are the
                                                    pod's annotations, sent again as the kubelet
                                                    does (containerd copies them from here);
                                                    cdi:NAME a CDI device (CDI_devices), quota:N
                                                    a CPU limit, env:NAME=VALUE an environment
                                                    variable of the container's own
    start ID | state ID | exec ID CMD... | stop ID | rm ID | stop-pod ID | rm-pod ID
    update ID QUOTA [CPUSET]                        UpdateContainerResources as the kubelet sends
                                                    it on a resize: CPU quota (period 100000) and
                                                    shares, and a cpuset only when given (the
                                                    static CPU manager's)
    pod-containers POD_ID                           every container id of the pod (none: nothing)
"""

import io
import os
import shlex
import sys

sys.path.insert(0, os.environ["CRI_STUBS"])
import grpc  # noqa: E402  (after the path is set)
import api_pb2 as cri  # noqa: E402
import api_pb2_grpc as cri_grpc  # noqa: E402

TIMEOUT = 60  # seconds per call: a hook that hangs shows as a failed call, not a hung test


def annotations(pairs):
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep:
            raise ValueError(f"annotation {p!r} is not KEY=VALUE")
        out[key] = value
    return out


def pod_config(name, cgroup_parent, ann):
    """A pod as the kubelet describes it, on the host's network (no CNI needed)."""
    return cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(name=name, uid=f"uid-{name}", namespace="cachepin-test", attempt=0),
        annotations=ann,
        labels={"io.kubernetes.pod.name": name},
        linux=cri.LinuxPodSandboxConfig(
            cgroup_parent=cgroup_parent,
            security_context=cri.LinuxSandboxSecurityContext(
                namespace_options=cri.NamespaceOption(network=cri.NODE, pid=cri.CONTAINER, ipc=cri.POD)
            ),
        ),
    )


def run(rt, cmd, args):

    if cmd == "version":
        v = rt.Version(cri.VersionRequest(version="v1"), timeout=TIMEOUT)
        print(v.runtime_name, v.runtime_version, v.runtime_api_version)
    elif cmd == "run-pod":
        name, parent, handler = args[:3]
        r = rt.RunPodSandbox(
            cri.RunPodSandboxRequest(config=pod_config(name, parent, annotations(args[3:])), runtime_handler=handler),
            timeout=TIMEOUT,
        )
        print(r.pod_sandbox_id)
    elif cmd == "create":
        pod_id, name, image, parent, pod_name = args[:5]
        own = [a for a in args[5:] if not a.startswith(("pod:", "quota:", "cdi:", "env:"))]
        pod = [a[len("pod:") :] for a in args[5:] if a.startswith("pod:")]
        quota = [int(a[len("quota:") :]) for a in args[5:] if a.startswith("quota:")]
        cdi = [a[len("cdi:") :] for a in args[5:] if a.startswith("cdi:")]
        env = [a[len("env:") :].split("=", 1) for a in args[5:] if a.startswith("env:")]
        config = cri.ContainerConfig(
            metadata=cri.ContainerMetadata(name=name, attempt=0),
            image=cri.ImageSpec(image=image),
            command=["sleep", "3600"],
            annotations=annotations(own),
            labels={"io.kubernetes.container.name": name},
        )
        for key, value in env:  # the pod spec's env: whatever its author writes
            config.envs.add(key=key, value=value)
        for name in cdi:  # a CDI device, as the kubelet passes a prepared DRA claim's
            config.CDI_devices.add(name=name)
        if quota:  # a CPU limit, as the kubelet sets it: quota per 100 ms period
            config.linux.resources.CopyFrom(cri.LinuxContainerResources(
                cpu_period=100000, cpu_quota=quota[0], cpu_shares=quota[0] * 1024 // 100000))
        r = rt.CreateContainer(
            cri.CreateContainerRequest(
                pod_sandbox_id=pod_id, config=config, sandbox_config=pod_config(pod_name, parent, annotations(pod))
            ),
            timeout=TIMEOUT,
        )
        print(r.container_id)
    elif cmd == "start":
        rt.StartContainer(cri.StartContainerRequest(container_id=args[0]), timeout=TIMEOUT)
    elif cmd == "state":
        s = rt.ContainerStatus(cri.ContainerStatusRequest(container_id=args[0]), timeout=TIMEOUT)
        print(cri.ContainerState.Name(s.status.state))
    elif cmd == "exec":
        r = rt.ExecSync(cri.ExecSyncRequest(container_id=args[0], cmd=args[1:], timeout=30), timeout=TIMEOUT)
        sys.stdout.write(r.stdout.decode())
        sys.stderr.write(r.stderr.decode())
        return r.exit_code
    elif cmd == "update":
        quota = int(args[1])
        res = cri.LinuxContainerResources(cpu_period=100000, cpu_quota=quota, cpu_shares=quota * 1024 // 100000,
                                          cpuset_cpus=args[2] if len(args) > 2 else "")
        rt.UpdateContainerResources(cri.UpdateContainerResourcesRequest(container_id=args[0], linux=res),
                                    timeout=TIMEOUT)
    elif cmd == "stop":
        rt.StopContainer(cri.StopContainerRequest(container_id=args[0], timeout=0), timeout=TIMEOUT)
    elif cmd == "rm":
        rt.RemoveContainer(cri.RemoveContainerRequest(container_id=args[0]), timeout=TIMEOUT)
    elif cmd == "stop-pod":
        rt.StopPodSandbox(cri.StopPodSandboxRequest(pod_sandbox_id=args[0]), timeout=TIMEOUT)
    elif cmd == "rm-pod":
        rt.RemovePodSandbox(cri.RemovePodSandboxRequest(pod_sandbox_id=args[0]), timeout=TIMEOUT)
    elif cmd == "pod-containers":
        f = cri.ContainerFilter(pod_sandbox_id=args[0])
        for c in rt.ListContainers(cri.ListContainersRequest(filter=f), timeout=TIMEOUT).containers:
            print(c.id)
    else:
        raise ValueError(f"unknown command {cmd!r}")
    return 0


def run_reporting(rt, words):
    """Run one command; its status (1 on an RPC error, reported on stderr)."""
    try:
        return run(rt, words[0], words[1:])
    except grpc.RpcError as e:
        print(f"cri_client: {words[0]}: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    except (IndexError, ValueError) as e:
        print(f"cri_client: {words[0]}: {e}", file=sys.stderr)
        return 2


def serve(rt):
    for line in sys.stdin:
        words = shlex.split(line)
        out = io.StringIO()
        saved, sys.stdout = sys.stdout, out
        try:
            rc = run_reporting(rt, words) if words else 2
        finally:
            sys.stdout = saved
        sys.stdout.write(out.getvalue())
        sys.stdout.write(f".END {rc}\n")
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def main(argv):
    if len(argv) < 3 or argv[0] != "--socket":
        raise SystemExit(__doc__)
    rt = cri_grpc.RuntimeServiceStub(grpc.insecure_channel(f"unix://{argv[1]}"))
    if argv[2] == "--serve":
        return serve(rt)
    return run_reporting(rt, argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
