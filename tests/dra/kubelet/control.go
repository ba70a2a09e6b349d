package main

// The control socket: a unix socket that takes one JSON request a line and answers each
// with one JSON line ({"ok": true|false, ...}). The same binary is the client.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

type request struct {
	Op            string `json:"op"`
	Claim         string `json:"claim,omitempty"`
	Driver        string `json:"driver,omitempty"`
	Registrations int    `json:"registrations,omitempty"`
	Gone          bool   `json:"gone,omitempty"`
	Timeout       string `json:"timeout,omitempty"`
}

type answer struct {
	OK      bool          `json:"ok"`
	Op      string        `json:"op"`
	Error   string        `json:"error,omitempty"`
	Plugins []plugin      `json:"plugins"`
	Sockets []socketState `json:"sockets,omitempty"`
}

const maxRequest = 4096

func listenControl(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func serveControl(ln net.Listener, dm *draManager, pm *pluginManager) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go handleControl(c, dm, pm)
	}
}

func handleControl(c net.Conn, dm *draManager, pm *pluginManager) {
	defer c.Close()
	r := bufio.NewReaderSize(c, maxRequest)
	enc := json.NewEncoder(c)
	for {
		line, prefix, err := r.ReadLine()
		if err != nil {
			return
		}
		if prefix {
			enc.Encode(answer{Op: "?", Error: fmt.Sprintf("a request longer than %d bytes", maxRequest)})
			return
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			enc.Encode(answer{Op: "?", Error: fmt.Sprintf("not a JSON request: %v", err)})
			continue
		}
		enc.Encode(dispatch(req, dm, pm))
	}
}

func dispatch(req request, dm *draManager, pm *pluginManager) any {
	switch req.Op {
	case "prepare", "unprepare":
		claim, err := parseClaim(req.Claim)
		if err != nil {
			return answer{Op: req.Op, Error: "claim: " + err.Error()}
		}
		return dm.call(req.Op, claim, req.Driver)
	case "plugins":
		list, _ := dm.list()
		return answer{OK: true, Op: "plugins", Plugins: list, Sockets: pm.snapshot()}
	case "wait":
		timeout, err := time.ParseDuration(req.Timeout)
		if err != nil || timeout <= 0 {
			return answer{Op: "wait", Error: fmt.Sprintf("timeout: %q is not a positive duration", req.Timeout)}
		}
		deadline := time.After(timeout)
		for {
			list, changed := dm.list()
			if waitDone(list, req) {
				return answer{OK: true, Op: "wait", Plugins: list}
			}
			select {
			case <-changed:
			case <-deadline:
				return answer{Op: "wait", Error: fmt.Sprintf("not there after %s", timeout), Plugins: list, Sockets: pm.snapshot()}
			}
		}
	default:
		return answer{Op: req.Op, Error: fmt.Sprintf("unknown op %q (wait, prepare, unprepare, plugins)", req.Op)}
	}
}

// waitDone: with Gone, no plugin named Driver (or none at all) is registered; else one
// (named Driver, if named) is registered and has been registered Registrations times.
func waitDone(list []plugin, req request) bool {
	for _, p := range list {
		if req.Driver != "" && p.Name != req.Driver || !p.Registered {
			continue
		}
		if req.Gone {
			return false
		}
		if p.Registrations >= req.Registrations {
			return true
		}
	}
	return req.Gone
}

// client: one request, its answer printed; 0 ok, 1 not.
func client(path string, req request, stdout, stderr io.Writer) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(stderr, "kubelet-standin %s: the control socket: %v\n", req.Op, err)
		return 1
	}
	defer c.Close()
	if err := json.NewEncoder(c).Encode(req); err != nil {
		fmt.Fprintf(stderr, "kubelet-standin %s: %v\n", req.Op, err)
		return 1
	}
	r := bufio.NewReader(c)
	line, err := r.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(stderr, "kubelet-standin %s: no answer: %v\n", req.Op, err)
		return 1
	}
	stdout.Write(line)
	var a struct {
		OK bool `json:"ok"`
	}
	if json.Unmarshal(line, &a) != nil || !a.OK {
		return 1
	}
	return 0
}
