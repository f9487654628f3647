// gpuscope-kubeapi: a stand-in for the few Kubernetes API server endpoints the agent's pod metadata source
// reads (docs/design/kubernetes.md): one pod, the pods of a node (list with fieldSelector spec.nodeName),
// one ReplicaSet, one Job. Objects are the upstream API types of k8s.io/api (core/v1 Pod, apps/v1
// ReplicaSet, batch/v1 Job) and errors the upstream metav1.Status, at the version the pinned k8s.io/kubelet
// requires (scripts/versions.env), served from a JSON scenario file. Built by scripts/build-peers.sh.
//
// Usage: gpuscope-kubeapi --listen 127.0.0.1:0 --scenario FILE [--cert CERT.pem --key KEY.pem]
//
//	With --cert and --key it serves HTTPS (TLS 1.2 and up) with that certificate, else plain HTTP.
//
// Behaviour the tests rely on:
//   - Endpoints: GET /api/v1/namespaces/{ns}/pods/{name}, GET /api/v1/pods (optionally
//     ?fieldSelector=spec.nodeName=NODE; another field selector is answered 400 as the real server
//     answers an unsupported field label), GET /api/v1/namespaces/{ns}/pods,
//     GET /apis/apps/v1/namespaces/{ns}/replicasets/{name}, GET /apis/batch/v1/namespaces/{ns}/jobs/{name}.
//     Anything else: 404 with a metav1.Status (reason NotFound), a method other than GET: 405.
//   - Authentication: when the scenario lists "tokens", a request without "Authorization: Bearer T" for
//     one of them is answered 401 (metav1.Status, reason Unauthorized), as the API server does.
//   - "forbid": verbs refused with 403 (metav1.Status, reason Forbidden, the RBAC message), each written
//     "RESOURCE/VERB": "pods/list", "pods/get", "replicasets/get", "jobs/get"; "*" refuses everything.
//   - "throttle_retry_after_seconds" > 0: every authenticated request is answered 429 with that
//     Retry-After header and a metav1.Status (reason TooManyRequests, details.retryAfterSeconds), as the
//     API priority and fairness filter does.
//   - "malformed_bodies": every 200 answer's JSON is cut in half (a proxy cutting a response, or a
//     hostile server), to prove the client's parser errors keep its cache.
//   - Not found: 404 with the server's message (`pods "NAME" not found`, reason NotFound, details).
//   - Reloading: the file is read every 100 ms and served when its bytes changed. A file that does not
//     parse or validate is refused with one log line and the last good scenario stays served; at start-up
//     the same error exits with status 2.
//   - Log lines on stderr: "listening on http(s)://HOST:PORT", "serving scenario sha256=HEX ...",
//     "scenario FILE refused ...: ERROR", and one line per request, the request log:
//     "request GET /api/v1/pods?fieldSelector=... status=200" (time in the log prefix, microseconds).
//
// Thread-safety: the scenario is swapped whole through an atomic pointer; each request reads one snapshot.
package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The scenario file (JSON). Unknown fields are errors, so a misspelt field is never silently ignored;
// the objects are decoded into the upstream types (their own unknown fields are errors too).
type scenarioFile struct {
	Tokens                    []string            `json:"tokens"`
	Forbid                    []string            `json:"forbid"`
	ThrottleRetryAfterSeconds int                 `json:"throttle_retry_after_seconds"`
	MalformedBodies           bool                `json:"malformed_bodies"`
	Pods                      []corev1.Pod        `json:"pods"`
	ReplicaSets               []appsv1.ReplicaSet `json:"replicasets"`
	Jobs                      []batchv1.Job       `json:"jobs"`
}

type scenario struct {
	file        scenarioFile
	sha256      string
	forbid      map[string]bool
	pods        map[string]*corev1.Pod
	replicaSets map[string]*appsv1.ReplicaSet
	jobs        map[string]*batchv1.Job
}

func key(namespace, name string) string { return namespace + "/" + name }

var verbs = map[string]bool{"*": true, "pods/list": true, "pods/get": true, "replicasets/get": true, "jobs/get": true}

// parseScenario decodes and validates a scenario file; errors name the offending field.
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
	s := &scenario{file: file, forbid: map[string]bool{}, pods: map[string]*corev1.Pod{},
		replicaSets: map[string]*appsv1.ReplicaSet{}, jobs: map[string]*batchv1.Job{}}
	for i, token := range file.Tokens {
		if token == "" {
			return nil, fmt.Errorf("tokens[%d]: empty token", i)
		}
	}
	for i, verb := range file.Forbid {
		if !verbs[verb] {
			return nil, fmt.Errorf("forbid[%d]: %q is none of *, pods/list, pods/get, replicasets/get, jobs/get", i, verb)
		}
		s.forbid[verb] = true
	}
	if file.ThrottleRetryAfterSeconds < 0 {
		return nil, errors.New("throttle_retry_after_seconds: negative")
	}
	check := func(where string, meta *metav1.ObjectMeta, seen map[string]bool) error {
		if meta.Namespace == "" || meta.Name == "" {
			return fmt.Errorf("%s: metadata.namespace and metadata.name are required", where)
		}
		if seen[key(meta.Namespace, meta.Name)] {
			return fmt.Errorf("%s: %s listed twice", where, key(meta.Namespace, meta.Name))
		}
		seen[key(meta.Namespace, meta.Name)] = true
		return nil
	}
	seen := map[string]bool{}
	for i := range s.file.Pods {
		p := &s.file.Pods[i]
		if err := check(fmt.Sprintf("pods[%d]", i), &p.ObjectMeta, seen); err != nil {
			return nil, err
		}
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		s.pods[key(p.Namespace, p.Name)] = p
	}
	seen = map[string]bool{}
	for i := range s.file.ReplicaSets {
		r := &s.file.ReplicaSets[i]
		if err := check(fmt.Sprintf("replicasets[%d]", i), &r.ObjectMeta, seen); err != nil {
			return nil, err
		}
		r.TypeMeta = metav1.TypeMeta{Kind: "ReplicaSet", APIVersion: "apps/v1"}
		s.replicaSets[key(r.Namespace, r.Name)] = r
	}
	seen = map[string]bool{}
	for i := range s.file.Jobs {
		j := &s.file.Jobs[i]
		if err := check(fmt.Sprintf("jobs[%d]", i), &j.ObjectMeta, seen); err != nil {
			return nil, err
		}
		j.TypeMeta = metav1.TypeMeta{Kind: "Job", APIVersion: "batch/v1"}
		s.jobs[key(j.Namespace, j.Name)] = j
	}
	sum := sha256.Sum256(data)
	s.sha256 = hex.EncodeToString(sum[:])
	return s, nil
}

type server struct {
	current atomic.Pointer[scenario]
}

// statusWriter remembers the status code for the request log.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func writeJSON(w http.ResponseWriter, code int, object any) {
	body, err := json.Marshal(object)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// writeObject answers 200 with the object, cut in half when the scenario asks for malformed bodies.
func writeObject(w http.ResponseWriter, sc *scenario, object any) {
	if !sc.file.MalformedBodies {
		writeJSON(w, http.StatusOK, object)
		return
	}
	body, _ := json.Marshal(object)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body[:len(body)/2])
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string,
	details *metav1.StatusDetails) {
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Details: details, Code: int32(code),
	})
}

func (s *server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := &statusWriter{ResponseWriter: rw, code: http.StatusOK}
	defer func() { log.Printf("request %s %s status=%d", r.Method, r.URL.RequestURI(), w.code) }()
	sc := s.current.Load()
	if len(sc.file.Tokens) > 0 {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		valid := false
		for _, t := range sc.file.Tokens {
			valid = valid || (ok && token == t)
		}
		if !valid {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized", nil)
			return
		}
	}
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("the server does not allow this method on the requested resource (%s)", r.Method), nil)
		return
	}
	if sc.file.ThrottleRetryAfterSeconds > 0 {
		seconds := sc.file.ThrottleRetryAfterSeconds
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
			"Too many requests, please try again later.", &metav1.StatusDetails{RetryAfterSeconds: int32(seconds)})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	forbidden := func(resource, verb, group, namespace string) bool {
		if !sc.forbid["*"] && !sc.forbid[resource+"/"+verb] {
			return false
		}
		scope := "at the cluster scope"
		if namespace != "" {
			scope = fmt.Sprintf("in the namespace %q", namespace)
		}
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
			fmt.Sprintf("%s is forbidden: User \"system:serviceaccount:gpuscope:gpuscope-agent\" cannot %s resource %q in API group %q %s",
				resource, verb, resource, group, scope),
			&metav1.StatusDetails{Kind: resource, Group: group})
		return true
	}
	notFound := func(resource, group, name string) {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", qualified(resource, group), name),
			&metav1.StatusDetails{Name: name, Kind: resource, Group: group})
	}
	switch {
	case len(parts) == 3 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "pods":
		s.listPods(w, r, sc, "", forbidden)
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "pods":
		s.listPods(w, r, sc, parts[3], forbidden)
	case len(parts) == 6 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "pods":
		if forbidden("pods", "get", "", parts[3]) {
			return
		}
		if p := sc.pods[key(parts[3], parts[5])]; p != nil {
			writeObject(w, sc, p)
		} else {
			notFound("pods", "", parts[5])
		}
	case len(parts) == 7 && parts[0] == "apis" && parts[1] == "apps" && parts[2] == "v1" && parts[3] == "namespaces" &&
		parts[5] == "replicasets":
		if forbidden("replicasets", "get", "apps", parts[4]) {
			return
		}
		if rs := sc.replicaSets[key(parts[4], parts[6])]; rs != nil {
			writeObject(w, sc, rs)
		} else {
			notFound("replicasets", "apps", parts[6])
		}
	case len(parts) == 7 && parts[0] == "apis" && parts[1] == "batch" && parts[2] == "v1" && parts[3] == "namespaces" &&
		parts[5] == "jobs":
		if forbidden("jobs", "get", "batch", parts[4]) {
			return
		}
		if j := sc.jobs[key(parts[4], parts[6])]; j != nil {
			writeObject(w, sc, j)
		} else {
			notFound("jobs", "batch", parts[6])
		}
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource",
			&metav1.StatusDetails{})
	}
}

// qualified names a resource as the server's messages do: "pods", "replicasets.apps", "jobs.batch".
func qualified(resource, group string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func (s *server) listPods(w http.ResponseWriter, r *http.Request, sc *scenario, namespace string,
	forbidden func(resource, verb, group, namespace string) bool) {
	if forbidden("pods", "list", "", namespace) {
		return
	}
	node := ""
	if selector := r.URL.Query().Get("fieldSelector"); selector != "" {
		value, ok := strings.CutPrefix(selector, "spec.nodeName=")
		if !ok || strings.Contains(value, ",") {
			field, _, _ := strings.Cut(selector, "=")
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
				fmt.Sprintf("field label not supported: %s", field), nil)
			return
		}
		node = value
	}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: sc.sha256[:12]}, Items: []corev1.Pod{}}
	for _, p := range sc.file.Pods {
		if (namespace == "" || p.Namespace == namespace) && (node == "" || p.Spec.NodeName == node) {
			list.Items = append(list.Items, p)
		}
	}
	writeObject(w, sc, list)
}

// reloader serves the file's scenario anew when its bytes change (checked every 100 ms).
type reloader struct {
	path       string
	server     *server
	lastBytes  []byte
	lastRefuse string
}

func (r *reloader) load() error {
	data, err := os.ReadFile(r.path)
	if err != nil {
		r.refuse(err)
		return err
	}
	if r.lastBytes != nil && bytes.Equal(data, r.lastBytes) {
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
	log.Printf("serving scenario sha256=%s: %d pods, %d replicasets, %d jobs", sc.sha256, len(sc.file.Pods),
		len(sc.file.ReplicaSets), len(sc.file.Jobs))
	return nil
}

func (r *reloader) refuse(err error) {
	served := r.server.current.Load()
	if served == nil || err.Error() == r.lastRefuse {
		return
	}
	r.lastRefuse = err.Error()
	log.Printf("scenario %s refused (still serving sha256=%s): %v", r.path, served.sha256, err)
}

func main() {
	log.SetPrefix("kubeapi: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: any free port, logged)")
	scenarioPath := flag.String("scenario", "", "JSON scenario file, re-read when it changes")
	certFile := flag.String("cert", "", "PEM server certificate: serve HTTPS (with --key)")
	keyFile := flag.String("key", "", "PEM private key of --cert")
	flag.Parse()
	if *scenarioPath == "" || flag.NArg() != 0 || (*certFile == "") != (*keyFile == "") {
		fmt.Fprintln(os.Stderr, "usage: gpuscope-kubeapi --scenario FILE [--listen HOST:PORT] [--cert CERT --key KEY]")
		os.Exit(2)
	}
	srv := &server{}
	r := &reloader{path: *scenarioPath, server: srv}
	if err := r.load(); err != nil {
		fmt.Fprintf(os.Stderr, "kubeapi: scenario %s: %v\n", *scenarioPath, err)
		os.Exit(2)
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeapi: %v\n", err)
		os.Exit(1)
	}
	scheme := "http"
	if *certFile != "" {
		certificate, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kubeapi: %v\n", err)
			os.Exit(2)
		}
		listener = tls.NewListener(listener, &tls.Config{Certificates: []tls.Certificate{certificate},
			MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		scheme = "https"
	}
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			_ = r.load() // a refusal is logged there; the last good scenario stays served
		}
	}()
	log.Printf("listening on %s://%s", scheme, listener.Addr())
	httpServer := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	if err := httpServer.Serve(listener); err != nil {
		log.Printf("serve: %v", err)
		os.Exit(1)
	}
}
