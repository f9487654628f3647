// gpuscope-kubevalidate: checks rendered Kubernetes manifests offline, on upstream code.
//
// Every YAML document of the files given (or of stdin, "-") is decoded strictly into its typed struct:
// the built-in kinds into k8s.io/api's, ServiceMonitor and PodMonitor into the prometheus-operator's
// monitoring.coreos.com/v1 types. Decoding goes through k8s.io/apimachinery's JSON/YAML serializer in strict
// mode (the API server's own decoder with its fieldValidation=Strict behaviour), so an unknown or misspelt
// field, a duplicated field, a value of the wrong type, an unparsable quantity and a missing apiVersion or
// kind are each an error. The built-in kinds are then checked against the API's OpenAPI-derived schema as
// server-side apply checks them (client-go's applyconfigurations type converter, structured-merge-diff): field
// names and types again, from the OpenAPI rather than the Go structs, and duplicate keys in associative lists
// (two containers or volumes of one name, two ports of one number and protocol). Then structural checks the
// API server would make or a controller depends on: names, labels, a workload's selector matching its pod
// template, containers with a name and an image, ports in range, volume mounts naming a volume, a Service's
// targetPort naming a container port of the pods it selects, ServiceMonitor/PodMonitor selectors and ports
// matching the Service or pods in the same files, RBAC role references. Prints one line per object (kind/name: ok) and one per problem; exit status 1
// when any object has a problem, 2 on usage errors.
//
// Not done here: kube-openapi's full OpenAPI validation (required fields, formats), whose Kubernetes
// definitions are generated into k8s.io/kubernetes (not a module meant for import); the structural checks
// below cover the required fields the chart's kinds have.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/applyconfigurations"
)

// object is one decoded document and where it came from.
type object struct {
	where string // file#document index
	gvk   schema.GroupVersionKind
	obj   runtime.Object
}

// The built-in kinds, which the OpenAPI-derived schema of client-go's applyconfigurations covers.
var builtin = []func(*runtime.Scheme) error{
	corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme,
}

func newScheme(adds ...func(*runtime.Scheme) error) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range adds {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// validator holds the schemes and the schema type converter.
type validator struct {
	all       *runtime.Scheme // built-in and monitoring.coreos.com kinds, for strict decoding
	builtin   *runtime.Scheme // built-in kinds, for the schema check
	converter managedfields.TypeConverter
}

func newValidator() *validator {
	b := newScheme(builtin...)
	return &validator{
		all:       newScheme(append(append([]func(*runtime.Scheme) error{}, builtin...), monitoringv1.AddToScheme)...),
		builtin:   b,
		converter: applyconfigurations.NewTypeConverter(b),
	}
}

// readDocuments splits a multi-document YAML stream; documents holding only comments are skipped.
func readDocuments(r io.Reader) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		empty := true
		for _, line := range strings.Split(string(doc), "\n") {
			t := strings.TrimSpace(line)
			if t != "" && t != "---" && !strings.HasPrefix(t, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, doc)
		}
	}
}

// decode decodes one document strictly into its registered type, then checks a built-in kind against the
// API's schema.
func (v *validator) decode(doc []byte) (runtime.Object, schema.GroupVersionKind, error) {
	var tm metav1.TypeMeta
	if err := utilyaml.Unmarshal(doc, &tm); err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("not a YAML object: %v", err)
	}
	if tm.APIVersion == "" {
		return nil, schema.GroupVersionKind{}, errors.New("apiVersion is missing")
	}
	if tm.Kind == "" {
		return nil, schema.GroupVersionKind{}, errors.New("kind is missing")
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q: %v", tm.APIVersion, err)
	}
	gvk := gv.WithKind(tm.Kind)
	if !v.all.Recognizes(gvk) {
		return nil, gvk, fmt.Errorf("%s is not a kind this validator knows (%s)", tm.Kind, tm.APIVersion)
	}
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, v.all, v.all,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	obj, _, err := ser.Decode(doc, &gvk, nil)
	if err != nil {
		// A strict decoding error comes with the object decoded leniently; it is still an error here.
		return nil, gvk, err
	}
	if v.builtin.Recognizes(gvk) {
		raw, err := utilyaml.ToJSON(doc)
		if err != nil {
			return nil, gvk, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, gvk, err
		}
		if _, err := v.converter.ObjectToTyped(u); err != nil {
			return nil, gvk, fmt.Errorf("schema: %v", err)
		}
	}
	return obj, gvk, nil
}

// checker collects problems for one object.
type checker struct{ problems []string }

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *checker) meta(m *metav1.ObjectMeta, namespaced bool) {
	if m.Name == "" {
		c.addf("metadata.name is missing")
	} else {
		for _, e := range validation.IsDNS1123Subdomain(m.Name) {
			c.addf("metadata.name %q: %s", m.Name, e)
		}
	}
	if !namespaced && m.Namespace != "" {
		c.addf("metadata.namespace %q set on a cluster-scoped kind", m.Namespace)
	}
	c.labels("metadata.labels", m.Labels)
	for k := range m.Annotations {
		for _, e := range validation.IsQualifiedName(k) {
			c.addf("metadata.annotations key %q: %s", k, e)
		}
	}
}

func (c *checker) labels(field string, l map[string]string) {
	for k, v := range l {
		for _, e := range validation.IsQualifiedName(k) {
			c.addf("%s key %q: %s", field, k, e)
		}
		for _, e := range validation.IsValidLabelValue(v) {
			c.addf("%s[%s] value %q: %s", field, k, v, e)
		}
	}
}

func (c *checker) port(field string, p int32) {
	for _, e := range validation.IsValidPortNum(int(p)) {
		c.addf("%s %d: %s", field, p, e)
	}
}

// podSpec checks what the kubelet and the API server require of a pod template.
func (c *checker) podSpec(field string, spec *corev1.PodSpec) {
	if len(spec.Containers) == 0 {
		c.addf("%s.containers is empty", field)
	}
	volumes := map[string]bool{}
	for i, v := range spec.Volumes {
		for _, e := range validation.IsDNS1123Label(v.Name) {
			c.addf("%s.volumes[%d].name %q: %s", field, i, v.Name, e)
		}
		if volumes[v.Name] {
			c.addf("%s.volumes[%d].name %q: duplicate", field, i, v.Name)
		}
		volumes[v.Name] = true
		if v.HostPath != nil && !strings.HasPrefix(v.HostPath.Path, "/") {
			c.addf("%s.volumes[%d].hostPath.path %q: not absolute", field, i, v.HostPath.Path)
		}
	}
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	names := map[string]bool{}
	for i, ct := range all {
		cf := fmt.Sprintf("%s.containers[%s]", field, ct.Name)
		if ct.Name == "" {
			cf = fmt.Sprintf("%s.containers[%d]", field, i)
			c.addf("%s.name is missing", cf)
		} else {
			for _, e := range validation.IsDNS1123Label(ct.Name) {
				c.addf("%s.name: %s", cf, e)
			}
		}
		if names[ct.Name] {
			c.addf("%s.name: duplicate", cf)
		}
		names[ct.Name] = true
		if ct.Image == "" {
			c.addf("%s.image is missing", cf)
		}
		portNames := map[string]bool{}
		for j, p := range ct.Ports {
			c.port(fmt.Sprintf("%s.ports[%d].containerPort", cf, j), p.ContainerPort)
			if p.HostPort != 0 {
				c.port(fmt.Sprintf("%s.ports[%d].hostPort", cf, j), p.HostPort)
			}
			if p.Name != "" {
				for _, e := range validation.IsValidPortName(p.Name) {
					c.addf("%s.ports[%d].name %q: %s", cf, j, p.Name, e)
				}
				if portNames[p.Name] {
					c.addf("%s.ports[%d].name %q: duplicate", cf, j, p.Name)
				}
				portNames[p.Name] = true
			}
		}
		mounts := map[string]bool{}
		for j, m := range ct.VolumeMounts {
			if !volumes[m.Name] {
				c.addf("%s.volumeMounts[%d] names volume %q, which the pod does not declare", cf, j, m.Name)
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				c.addf("%s.volumeMounts[%d].mountPath %q: not absolute", cf, j, m.MountPath)
			}
			if mounts[m.MountPath] {
				c.addf("%s.volumeMounts[%d].mountPath %q: mounted twice", cf, j, m.MountPath)
			}
			mounts[m.MountPath] = true
		}
		for j, e := range ct.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				c.addf("%s.env[%d].name %q: %s", cf, j, e.Name, msg)
			}
		}
		for _, probe := range []*corev1.Probe{ct.LivenessProbe, ct.ReadinessProbe, ct.StartupProbe} {
			if probe != nil && probe.HTTPGet != nil {
				c.targetPort(cf+" probe port", probe.HTTPGet.Port, portNames)
			}
		}
	}
}

// targetPort checks a port given by number or by the name of a container port.
func (c *checker) targetPort(field string, p intstr.IntOrString, names map[string]bool) {
	if p.Type == intstr.String {
		if !names[p.StrVal] {
			c.addf("%s %q names no container port", field, p.StrVal)
		}
		return
	}
	c.port(field, p.IntVal)
}

// selectorMatches reports whether a label selector selects the given labels; an empty selector is an error.
func (c *checker) selectorMatches(field string, sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		c.addf("%s is empty", field)
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		c.addf("%s: %v", field, err)
		return false
	}
	return s.Matches(labels.Set(l))
}

// workload checks a controller of pods: its selector against its template, the pod spec, and the
// ServiceAccount and ConfigMaps the pods name.
func (c *checker) workload(m *metav1.ObjectMeta, sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, all []object) {
	c.meta(m, true)
	c.labels("spec.template.metadata.labels", t.Labels)
	if !c.selectorMatches("spec.selector", sel, t.Labels) {
		c.addf("spec.selector does not select the pods of spec.template")
	}
	c.podSpec("spec.template.spec", &t.Spec)
	// Every namespace has the "default" ServiceAccount; any other must be in the files.
	if sa := t.Spec.ServiceAccountName; sa != "" && sa != "default" && !hasObject(all, "ServiceAccount", sa) {
		c.addf("spec.template.spec.serviceAccountName %q: no such ServiceAccount in these files", sa)
	}
	for i, vol := range t.Spec.Volumes {
		if vol.ConfigMap != nil && !hasObject(all, "ConfigMap", vol.ConfigMap.Name) &&
			(vol.ConfigMap.Optional == nil || !*vol.ConfigMap.Optional) {
			c.addf("spec.template.spec.volumes[%d] names ConfigMap %q, not in these files", i, vol.ConfigMap.Name)
		}
	}
}

// podTemplate is one pod template of the files: its labels and its containers' ports, by name and number.
type podTemplate struct {
	labels map[string]string
	ports  map[string]int32
	nums   map[int32]bool
}

func collectPods(objs []object) []podTemplate {
	var out []podTemplate
	for _, o := range objs {
		var t *corev1.PodTemplateSpec
		switch v := o.obj.(type) {
		case *appsv1.DaemonSet:
			t = &v.Spec.Template
		case *appsv1.Deployment:
			t = &v.Spec.Template
		case *appsv1.StatefulSet:
			t = &v.Spec.Template
		}
		if t == nil {
			continue
		}
		p := podTemplate{labels: t.Labels, ports: map[string]int32{}, nums: map[int32]bool{}}
		for _, ct := range t.Spec.Containers {
			for _, cp := range ct.Ports {
				p.nums[cp.ContainerPort] = true
				if cp.Name != "" {
					p.ports[cp.Name] = cp.ContainerPort
				}
			}
		}
		out = append(out, p)
	}
	return out
}

func check(o object, all []object, pods []podTemplate) []string {
	c := &checker{}
	switch v := o.obj.(type) {
	case *appsv1.DaemonSet:
		c.workload(&v.ObjectMeta, v.Spec.Selector, &v.Spec.Template, all)
	case *appsv1.Deployment:
		c.workload(&v.ObjectMeta, v.Spec.Selector, &v.Spec.Template, all)
	case *appsv1.StatefulSet:
		c.workload(&v.ObjectMeta, v.Spec.Selector, &v.Spec.Template, all)
	case *corev1.ServiceAccount:
		c.meta(&v.ObjectMeta, true)
	case *corev1.ConfigMap:
		c.meta(&v.ObjectMeta, true)
		for k := range v.Data {
			for _, e := range validation.IsConfigMapKey(k) {
				c.addf("data key %q: %s", k, e)
			}
		}
	case *corev1.Secret:
		c.meta(&v.ObjectMeta, true)
	case *corev1.Service:
		c.meta(&v.ObjectMeta, true)
		if len(v.Spec.Ports) == 0 {
			c.addf("spec.ports is empty")
		}
		var selected []podTemplate
		for _, p := range pods {
			if len(v.Spec.Selector) > 0 && labels.SelectorFromSet(v.Spec.Selector).Matches(labels.Set(p.labels)) {
				selected = append(selected, p)
			}
		}
		if len(v.Spec.Selector) == 0 {
			c.addf("spec.selector is empty")
		} else if len(selected) == 0 {
			c.addf("spec.selector %v selects no pod template in these files", v.Spec.Selector)
		}
		for i, p := range v.Spec.Ports {
			c.port(fmt.Sprintf("spec.ports[%d].port", i), p.Port)
			for _, sp := range selected {
				if p.TargetPort.Type == intstr.String {
					if _, ok := sp.ports[p.TargetPort.StrVal]; !ok {
						c.addf("spec.ports[%d].targetPort %q names no port of the selected pods", i, p.TargetPort.StrVal)
					}
				} else {
					tp := p.TargetPort.IntVal
					if tp == 0 {
						tp = p.Port
					}
					if !sp.nums[tp] {
						c.addf("spec.ports[%d] targets port %d, which the selected pods do not declare", i, tp)
					}
				}
			}
		}
	case *rbacv1.ClusterRole:
		c.meta(&v.ObjectMeta, false)
		for i, r := range v.Rules {
			if len(r.Verbs) == 0 {
				c.addf("rules[%d].verbs is empty", i)
			}
			if len(r.Resources) == 0 && len(r.NonResourceURLs) == 0 {
				c.addf("rules[%d] names no resources", i)
			}
		}
	case *rbacv1.ClusterRoleBinding:
		c.meta(&v.ObjectMeta, false)
		if v.RoleRef.APIGroup != rbacv1.GroupName || v.RoleRef.Kind != "ClusterRole" {
			c.addf("roleRef must be a ClusterRole of %s", rbacv1.GroupName)
		} else if !hasObject(all, "ClusterRole", v.RoleRef.Name) {
			c.addf("roleRef.name %q: no such ClusterRole in these files", v.RoleRef.Name)
		}
		if len(v.Subjects) == 0 {
			c.addf("subjects is empty")
		}
		for i, s := range v.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == "" {
				c.addf("subjects[%d]: a ServiceAccount subject needs a namespace", i)
			}
		}
	case *monitoringv1.ServiceMonitor:
		c.meta(&v.ObjectMeta, true)
		if len(v.Spec.Endpoints) == 0 {
			c.addf("spec.endpoints is empty")
		}
		matched := false
		for _, s := range all {
			svc, ok := s.obj.(*corev1.Service)
			if !ok || !c.selectorMatches("spec.selector", &v.Spec.Selector, svc.Labels) {
				continue
			}
			matched = true
			for i, ep := range v.Spec.Endpoints {
				found := false
				for _, p := range svc.Spec.Ports {
					found = found || (ep.Port != "" && p.Name == ep.Port)
				}
				if !found {
					c.addf("spec.endpoints[%d].port %q names no port of Service %s", i, ep.Port, svc.Name)
				}
			}
		}
		if !matched {
			c.addf("spec.selector selects no Service in these files")
		}
	case *monitoringv1.PodMonitor:
		c.meta(&v.ObjectMeta, true)
		if len(v.Spec.PodMetricsEndpoints) == 0 {
			c.addf("spec.podMetricsEndpoints is empty")
		}
		matched := false
		for _, p := range pods {
			if !c.selectorMatches("spec.selector", &v.Spec.Selector, p.labels) {
				continue
			}
			matched = true
			for i, ep := range v.Spec.PodMetricsEndpoints {
				if ep.Port == nil || *ep.Port == "" {
					c.addf("spec.podMetricsEndpoints[%d].port is missing", i)
				} else if _, ok := p.ports[*ep.Port]; !ok {
					c.addf("spec.podMetricsEndpoints[%d].port %q names no container port", i, *ep.Port)
				}
			}
		}
		if !matched {
			c.addf("spec.selector selects no pod template in these files")
		}
	default:
		if m, ok := o.obj.(metav1.Object); ok {
			if m.GetName() == "" {
				c.addf("metadata.name is missing")
			}
		}
	}
	sort.Strings(c.problems)
	return c.problems
}

func hasObject(all []object, kind, name string) bool {
	for _, o := range all {
		if m, ok := o.obj.(metav1.Object); ok && o.gvk.Kind == kind && m.GetName() == name {
			return true
		}
	}
	return false
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: gpuscope-kubevalidate FILE... (- for stdin)")
		os.Exit(2)
	}
	v := newValidator()
	var objs []object
	failed := false
	for _, path := range os.Args[1:] {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(2)
		}
		docs, err := readDocuments(bytes.NewReader(data))
		if err != nil {
			fmt.Printf("%s: %v\n", path, err)
			failed = true
			continue
		}
		for i, doc := range docs {
			where := fmt.Sprintf("%s#%d", path, i)
			obj, gvk, err := v.decode(doc)
			if err != nil {
				fmt.Printf("%s %s: %v\n", where, gvk.Kind, err)
				failed = true
				continue
			}
			objs = append(objs, object{where: where, gvk: gvk, obj: obj})
		}
	}
	pods := collectPods(objs)
	for _, o := range objs {
		name := ""
		if m, ok := o.obj.(metav1.Object); ok {
			name = m.GetName()
		}
		problems := check(o, objs, pods)
		if len(problems) == 0 {
			fmt.Printf("%s %s/%s: ok\n", o.where, o.gvk.Kind, name)
			continue
		}
		failed = true
		for _, p := range problems {
			fmt.Printf("%s %s/%s: %s\n", o.where, o.gvk.Kind, name, p)
		}
	}
	if len(objs) == 0 && !failed {
		fmt.Println("no objects")
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}
