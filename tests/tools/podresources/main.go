// gpuscope-podresources: a stand-in for the kubelet's pod-resources API v1 (the PodResourcesLister service:
// List, GetAllocatableResources, Get) for the agent's Kubernetes attribution tests. It registers the
// upstream generated service (k8s.io/kubelet/pkg/apis/podresources/v1, pinned in scripts/versions.env) on a
// grpc-go server listening on a unix socket, as the kubelet does, and answers from a JSON scenario file:
// the node's allocatable devices and the pods holding them. Built by scripts/build-peers.sh (never
// vendored); docs/design/kubernetes.md describes the scenario format and what it is for.
//
// Usage: gpuscope-podresources --socket PATH --scenario FILE [--socket-mode 0600]
//
// Behaviour the tests rely on:
//   - The socket: a stale socket left at PATH (a server killed with -9) is removed and the path bound
//     anew, as the kubelet does; a PATH that exists and is not a socket is refused. The socket is created
//     with --socket-mode (the kubelet's is root-only). SIGTERM or SIGINT stops the server and removes it.
//   - Reloading: the file is read again every 100 ms and served when its bytes changed, and on SIGHUP.
//     A file that does not parse or validate is refused with a log line naming the error, and the last
//     good scenario stays served; at start-up it is an error (exit 2).
//   - Log lines on stderr, one per event, for the test wrappers (tests/integration/peers.py):
//     "listening on unix PATH", "serving scenario sha256=HEX ...", "scenario FILE refused ...: ERROR",
//     and one line per call ("call List: 2 pods", "call Get ns/name: served", ...).
//   - Devices are answered as the kubelet answers them (containerDevicesFromResourceDeviceInstances):
//     one ContainerDevices per device id and NUMA node, without topology when the scenario gives none.
//   - Get as kubelets of each age answer it, chosen by the scenario's "get": "served" (1.34 on, or the
//     KubeletPodResourcesGet gate on); "disabled" (1.27 to 1.33 with the gate off: code Unknown, "PodResources
//     API Get method disabled"); "unimplemented" (before 1.27: the method does not exist, code
//     Unimplemented as grpc-go answers an unknown method). A pod not in the scenario is answered as the
//     kubelet does: code Unknown, "pod NAME in namespace NS not found".
//
// Thread-safety: the scenario is swapped whole through an atomic pointer; calls read one snapshot each.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// The scenario file (JSON). Unknown fields are errors, so a misspelt field is never silently ignored.
type scenarioFile struct {
	// "served" (default), "disabled" or "unimplemented": how Get answers (see the header).
	Get         string        `json:"get"`
	Allocatable []deviceGroup `json:"allocatable"`
	Pods        []pod         `json:"pods"`
}

// Devices of one resource name, all on the same NUMA nodes (none: no topology reported).
type deviceGroup struct {
	ResourceName string   `json:"resource_name"`
	DeviceIDs    []string `json:"device_ids"`
	NUMANodes    []int64  `json:"numa_nodes"`
}

type pod struct {
	Namespace  string      `json:"namespace"`
	Name       string      `json:"name"`
	Containers []container `json:"containers"`
}

type container struct {
	Name    string        `json:"name"`
	Devices []deviceGroup `json:"devices"`
}

// A validated scenario, as served.
type scenario struct {
	file   scenarioFile
	sha256 string
	pods   map[string]*pod // by "namespace/name"
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// parseScenario decodes and validates the bytes of a scenario file; errors name the offending field.
func parseScenario(data []byte) (*scenario, error) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var file scenarioFile
	if err := decoder.Decode(&file); err != nil {
		return nil, fmt.Errorf("not a scenario: %w", err)
	}
	if _, err := decoder.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not a scenario: data after the JSON object")
	}
	switch file.Get {
	case "":
		file.Get = "served"
	case "served", "disabled", "unimplemented":
	default:
		return nil, fmt.Errorf("get: %q is none of served, disabled, unimplemented", file.Get)
	}
	allocatable := map[string]bool{}
	for i, group := range file.Allocatable {
		where := fmt.Sprintf("allocatable[%d]", i)
		if err := validateGroup(where, group); err != nil {
			return nil, err
		}
		for _, id := range group.DeviceIDs {
			key := group.ResourceName + " " + id
			if allocatable[key] {
				return nil, fmt.Errorf("%s: device %q of %s listed twice", where, id, group.ResourceName)
			}
			allocatable[key] = true
		}
	}
	s := &scenario{file: file, pods: map[string]*pod{}}
	for i := range file.Pods {
		p := &file.Pods[i]
		where := fmt.Sprintf("pods[%d]", i)
		if p.Namespace == "" || p.Name == "" {
			return nil, fmt.Errorf("%s: namespace and name are required", where)
		}
		if s.pods[podKey(p.Namespace, p.Name)] != nil {
			return nil, fmt.Errorf("%s: pod %s listed twice", where, podKey(p.Namespace, p.Name))
		}
		s.pods[podKey(p.Namespace, p.Name)] = p
		names := map[string]bool{}
		for j, c := range p.Containers {
			where := fmt.Sprintf("%s.containers[%d]", where, j)
			if c.Name == "" {
				return nil, fmt.Errorf("%s: name is required", where)
			}
			if names[c.Name] {
				return nil, fmt.Errorf("%s: container %q listed twice in pod %s", where, c.Name, podKey(p.Namespace, p.Name))
			}
			names[c.Name] = true
			for k, group := range c.Devices {
				if err := validateGroup(fmt.Sprintf("%s.devices[%d]", where, k), group); err != nil {
					return nil, err
				}
			}
		}
	}
	sum := sha256.Sum256(data)
	s.sha256 = hex.EncodeToString(sum[:])
	return s, nil
}

func validateGroup(where string, group deviceGroup) error {
	if group.ResourceName == "" {
		return fmt.Errorf("%s: resource_name is required", where)
	}
	if len(group.DeviceIDs) == 0 {
		return fmt.Errorf("%s: device_ids is empty", where)
	}
	for i, id := range group.DeviceIDs {
		if id == "" {
			return fmt.Errorf("%s.device_ids[%d]: empty device id", where, i)
		}
	}
	for i, node := range group.NUMANodes {
		if node < 0 {
			return fmt.Errorf("%s.numa_nodes[%d]: %d is negative", where, i, node)
		}
	}
	return nil
}

// containerDevices renders device groups as the kubelet does: one entry per device id and NUMA node.
func containerDevices(groups []deviceGroup) []*podresourcesv1.ContainerDevices {
	var out []*podresourcesv1.ContainerDevices
	for _, group := range groups {
		for _, id := range group.DeviceIDs {
			if len(group.NUMANodes) == 0 {
				out = append(out, &podresourcesv1.ContainerDevices{ResourceName: group.ResourceName, DeviceIds: []string{id}})
				continue
			}
			for _, node := range group.NUMANodes {
				out = append(out, &podresourcesv1.ContainerDevices{
					ResourceName: group.ResourceName,
					DeviceIds:    []string{id},
					Topology:     &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: node}}},
				})
			}
		}
	}
	return out
}

func podResources(p *pod) *podresourcesv1.PodResources {
	out := &podresourcesv1.PodResources{Name: p.Name, Namespace: p.Namespace}
	for _, c := range p.Containers {
		out.Containers = append(out.Containers,
			&podresourcesv1.ContainerResources{Name: c.Name, Devices: containerDevices(c.Devices)})
	}
	return out
}

func countDevices(groups []deviceGroup) int {
	n := 0
	for _, group := range groups {
		n += len(group.DeviceIDs)
	}
	return n
}

type server struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	current atomic.Pointer[scenario]
}

func (s *server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (
	*podresourcesv1.ListPodResourcesResponse, error) {
	sc := s.current.Load()
	response := &podresourcesv1.ListPodResourcesResponse{}
	for i := range sc.file.Pods {
		response.PodResources = append(response.PodResources, podResources(&sc.file.Pods[i]))
	}
	log.Printf("call List: %d pods", len(response.PodResources))
	return response, nil
}

func (s *server) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (
	*podresourcesv1.AllocatableResourcesResponse, error) {
	sc := s.current.Load()
	log.Printf("call GetAllocatableResources: %d devices", countDevices(sc.file.Allocatable))
	return &podresourcesv1.AllocatableResourcesResponse{Devices: containerDevices(sc.file.Allocatable)}, nil
}

func (s *server) Get(_ context.Context, request *podresourcesv1.GetPodResourcesRequest) (
	*podresourcesv1.GetPodResourcesResponse, error) {
	sc := s.current.Load()
	key := podKey(request.GetPodNamespace(), request.GetPodName())
	switch sc.file.Get {
	case "unimplemented":
		log.Printf("call Get %s: unimplemented", key)
		return nil, status.Error(codes.Unimplemented, "unknown method Get for service v1.PodResourcesLister")
	case "disabled":
		log.Printf("call Get %s: disabled", key)
		return nil, status.Error(codes.Unknown, "PodResources API Get method disabled")
	}
	p := sc.pods[key]
	if p == nil {
		log.Printf("call Get %s: not found", key)
		return nil, status.Errorf(codes.Unknown, "pod %s in namespace %s not found",
			request.GetPodName(), request.GetPodNamespace())
	}
	log.Printf("call Get %s: served", key)
	return &podresourcesv1.GetPodResourcesResponse{PodResources: podResources(p)}, nil
}

// reloader serves the file's scenario anew when its bytes change (checked every 100 ms) or on SIGHUP.
type reloader struct {
	path       string
	server     *server
	lastBytes  []byte // the bytes last parsed, served or refused
	lastRefuse string // the last refusal logged, so that a bad file is reported once, not every 100 ms
}

func (r *reloader) load(force bool) error {
	data, err := os.ReadFile(r.path)
	if err != nil {
		r.refuse(err)
		return err
	}
	if !force && r.lastBytes != nil && bytes.Equal(data, r.lastBytes) {
		return nil
	}
	r.lastBytes = data
	sc, err := parseScenario(data)
	if err != nil {
		r.refuse(err)
		return err
	}
	r.lastRefuse = ""
	r.server.current.Store(sc)
	containers := 0
	for _, p := range sc.file.Pods {
		containers += len(p.Containers)
	}
	log.Printf("serving scenario sha256=%s: %d pods, %d containers, %d allocatable devices, get %s", sc.sha256,
		len(sc.file.Pods), containers, countDevices(sc.file.Allocatable), sc.file.Get)
	return nil
}

// refuse logs why the file is not served (each distinct reason once); at start-up main reports it instead.
func (r *reloader) refuse(err error) {
	served := r.server.current.Load()
	if served == nil || err.Error() == r.lastRefuse {
		return
	}
	r.lastRefuse = err.Error()
	log.Printf("scenario %s refused (still serving sha256=%s): %v", r.path, served.sha256, err)
}

// listen binds the unix socket at path with the given mode, replacing a stale socket (never another file).
func listen(path string, mode os.FileMode) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if info, err := os.Lstat(path); err == nil {
		if info.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: not replacing it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
		log.Printf("removed the stale socket %s", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// The socket is created with the mode already (no moment with a wider one), then set explicitly.
	old := syscall.Umask(int(0o777 &^ mode.Perm()))
	listener, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		listener.Close()
		return nil, err
	}
	return listener, nil
}

func main() {
	log.SetPrefix("podresources: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	socket := flag.String("socket", "",
		"unix socket to serve on (the kubelet's: /var/lib/kubelet/pod-resources/kubelet.sock)")
	scenarioPath := flag.String("scenario", "", "JSON scenario file, re-read when it changes and on SIGHUP")
	modeText := flag.String("socket-mode", "0600", "permissions of the socket, octal")
	flag.Parse()
	if *socket == "" || *scenarioPath == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: gpuscope-podresources --socket PATH --scenario FILE [--socket-mode 0600]")
		os.Exit(2)
	}
	mode, err := strconv.ParseUint(*modeText, 8, 32)
	if err != nil || mode > 0o777 {
		fmt.Fprintf(os.Stderr, "podresources: --socket-mode %q is not an octal permission (0000 to 0777)\n", *modeText)
		os.Exit(2)
	}

	srv := &server{}
	r := &reloader{path: *scenarioPath, server: srv}
	if err := r.load(true); err != nil {
		fmt.Fprintf(os.Stderr, "podresources: scenario %s: %v\n", *scenarioPath, err)
		os.Exit(2)
	}

	listener, err := listen(*socket, os.FileMode(mode))
	if err != nil {
		fmt.Fprintf(os.Stderr, "podresources: %v\n", err)
		os.Exit(1)
	}
	grpcServer := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(grpcServer, srv)

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				_ = r.load(false) // a refusal is logged there; the last good scenario stays served
			case sig := <-signals:
				if sig == syscall.SIGHUP {
					_ = r.load(true)
					continue
				}
				log.Printf("%v: stopping", sig)
				grpcServer.Stop() // closes the listener, which removes the socket
				return
			}
		}
	}()
	log.Printf("listening on unix %s (mode %04o)", *socket, mode)
	if err := grpcServer.Serve(listener); err != nil {
		log.Printf("serve: %v", err)
		os.Exit(1)
	}
}
