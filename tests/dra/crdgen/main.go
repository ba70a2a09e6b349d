// crdgen writes the CustomResourceDefinitions under which the DRA tests' API server
// serves resource.k8s.io/v1 (ResourceSlice, ResourceClaim, DeviceClass,
// ResourceClaimTemplate), their OpenAPI v3 schemas made from Debian's k8s.io/api types:
//
//	crdgen OUTDIR    (run in the GOPATH's src directory: the types' comments are read there)
//
// How close this is to the kube-apiserver's built-in validation: the schema has every
// field with its JSON type (Go's, through reflection), the fields the API calls required
// (+required, or neither omitempty nor +optional, as openapi-gen decides), enums
// (+enum: the type's constants), list types and map keys (+listType, +listMapKey), and
// the limits written as declarative markers (+k8s:maxItems, +k8s:maxLength, and the
// k8s-short-name and k8s-long-name formats as a pattern), alpha ones too: the
// hand-written validation enforces the same limits. It lacks what only the hand-written
// validation (k8s.io/kubernetes/pkg/apis/resource/validation, not packaged) checks: the
// unions (+oneOf: exactly one of nodeName, nodeSelector, allNodes), CEL compilation of
// selectors, cross-field rules (a claim's status names devices of its requests, at most
// 128 devices and attributes+capacity per device, qualified-name syntax), and status
// rules (allocation immutable once set), items unique by key in atomic lists
// (+k8s:unique=map: a CEL rule for it is over a CRD's cost budget), and the optional key
// of status.devices (shareID: a CRD's map keys must be required, so it is left out of
// them). Unknown fields are pruned, as for every CRD, where the built-in kinds reject
// them under strict field validation. tests/dra/apiserver.sh tests the limits the driver
// relies on.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
)

type schema = map[string]any

// markers: for "pkgpath.Type" the type's comment markers, and for "pkgpath.Type.Field"
// the field's; enums: for "pkgpath.Type" its constants' values.
var (
	markers = map[string][]string{}
	enums   = map[string][]string{}
	parsed  = map[string]bool{}
)

func parsePkg(pkgPath string) {
	if parsed[pkgPath] {
		return
	}
	parsed[pkgPath] = true
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, filepath.FromSlash(pkgPath), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crdgen: %s: %v\n", pkgPath, err)
		os.Exit(1)
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range gd.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						doc := s.Doc
						if doc == nil {
							doc = gd.Doc
						}
						markers[pkgPath+"."+s.Name.Name] = tags(doc)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									markers[pkgPath+"."+s.Name.Name+"."+n.Name] = tags(fld.Doc)
								}
							}
						}
					case *ast.ValueSpec:
						if gd.Tok != token.CONST {
							continue
						}
						for _, v := range s.Values {
							// Either `X T = "v"` or `X = T("v")`.
							id, _ := s.Type.(*ast.Ident)
							if call, ok := v.(*ast.CallExpr); ok && len(call.Args) == 1 {
								id, _ = call.Fun.(*ast.Ident)
								v = call.Args[0]
							}
							if lit, ok := v.(*ast.BasicLit); ok && id != nil && lit.Kind == token.STRING {
								str, _ := strconv.Unquote(lit.Value)
								enums[pkgPath+"."+id.Name] = append(enums[pkgPath+"."+id.Name], str)
							}
						}
					}
				}
			}
		}
	}
}

// tags: the "+..." lines of a comment, a "+k8s:alpha(...)=" prefix dropped (what an alpha
// declarative rule states, the hand-written validation enforces already).
func tags(cg *ast.CommentGroup) []string {
	var out []string
	if cg == nil {
		return out
	}
	for _, c := range cg.List {
		t := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		if !strings.HasPrefix(t, "+") {
			continue
		}
		if strings.HasPrefix(t, "+k8s:alpha(") || strings.HasPrefix(t, "+k8s:beta(") {
			if i := strings.Index(t, ")="); i > 0 {
				t = t[i+2:]
			}
		}
		out = append(out, t)
	}
	return out
}

func tag(ts []string, name string) (string, bool) {
	for _, t := range ts {
		if t == name {
			return "", true
		}
		if strings.HasPrefix(t, name+"=") {
			return t[len(name)+1:], true
		}
	}
	return "", false
}

// Formats that the declarative markers name, as the patterns of apimachinery's
// validation (IsDNS1123Label, IsDNS1123Subdomain).
var formats = map[string]schema{
	"k8s-short-name": {"maxLength": 63, "pattern": `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`},
	"k8s-long-name": {"maxLength": 253,
		"pattern": `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`},
}

func apply(s schema, ts []string) {
	var keys []string
	for _, t := range ts {
		switch {
		case strings.HasPrefix(t, "+k8s:maxItems="):
			n, _ := strconv.Atoi(strings.TrimPrefix(t, "+k8s:maxItems="))
			if s["type"] == "array" {
				s["maxItems"] = n
			}
		case strings.HasPrefix(t, "+k8s:maxLength="):
			n, _ := strconv.Atoi(strings.TrimPrefix(t, "+k8s:maxLength="))
			if s["type"] == "string" {
				s["maxLength"] = n
			}
		case strings.HasPrefix(t, "+k8s:format="):
			if f, ok := formats[strings.TrimPrefix(t, "+k8s:format=")]; ok && s["type"] == "string" {
				for k, v := range f {
					s[k] = v
				}
			}
		case strings.HasPrefix(t, "+listType=") || strings.HasPrefix(t, "+k8s:listType="):
			if s["type"] == "array" {
				s["x-kubernetes-list-type"] = t[strings.Index(t, "=")+1:]
			}
		case strings.HasPrefix(t, "+listMapKey=") || strings.HasPrefix(t, "+k8s:listMapKey="):
			if k := t[strings.Index(t, "=")+1:]; !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if s["type"] != "array" || s["x-kubernetes-list-type"] != "map" {
		// An atomic list whose items are unique by key (+k8s:unique=map): not said, as a
		// CEL rule for it costs more than a CRD's budget on these nested lists.
		return
	}
	// A CRD's map keys must be required (or defaulted): optional ones (status.devices'
	// shareID) are left out, and the list is atomic when none is left.
	req, _ := s["items"].(schema)["required"].([]string)
	var kept []string
	for _, k := range keys {
		if slices.Contains(req, k) {
			kept = append(kept, k)
		}
	}
	if len(kept) == 0 {
		s["x-kubernetes-list-type"] = "atomic"
		return
	}
	s["x-kubernetes-list-map-keys"] = kept
}

var (
	timeType     = "k8s.io/apimachinery/pkg/apis/meta/v1.Time"
	microType    = "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime"
	durationType = "k8s.io/apimachinery/pkg/apis/meta/v1.Duration"
	quantityType = "k8s.io/apimachinery/pkg/api/resource.Quantity"
	intstrType   = "k8s.io/apimachinery/pkg/util/intstr.IntOrString"
	rawType      = "k8s.io/apimachinery/pkg/runtime.RawExtension"
	metaType     = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"
)

func of(t reflect.Type, depth int) schema {
	if depth > 30 {
		panic("crdgen: types nested too deep (a recursive type?) at " + t.String())
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.PkgPath() + "." + t.Name()
	switch name {
	case timeType, microType:
		return schema{"type": "string", "format": "date-time"}
	case durationType:
		return schema{"type": "string"}
	case quantityType, intstrType:
		return schema{"x-kubernetes-int-or-string": true,
			"anyOf": []schema{{"type": "integer"}, {"type": "string"}}}
	case rawType:
		return schema{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	case metaType:
		return schema{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	var s schema
	switch t.Kind() {
	case reflect.String:
		s = schema{"type": "string"}
		if t.PkgPath() != "" {
			parsePkg(t.PkgPath())
			if _, ok := tag(markers[name], "+enum"); ok && len(enums[name]) > 0 {
				s["enum"] = enums[name]
			}
		}
	case reflect.Bool:
		s = schema{"type": "boolean"}
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		s = schema{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Uint:
		s = schema{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		s = schema{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "format": "byte"}
		}
		s = schema{"type": "array", "items": of(t.Elem(), depth+1)}
	case reflect.Map:
		s = schema{"type": "object", "additionalProperties": of(t.Elem(), depth+1)}
	case reflect.Struct:
		s = structOf(t, depth)
	default:
		panic("crdgen: no schema for " + t.String())
	}
	return s
}

func structOf(t reflect.Type, depth int) schema {
	parsePkg(t.PkgPath())
	props := schema{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		js := f.Tag.Get("json")
		if js == "-" || !f.IsExported() {
			continue
		}
		jname, opts, _ := strings.Cut(js, ",")
		if jname == "" && strings.Contains(opts, "inline") || f.Anonymous && jname == "" {
			in := structOf(f.Type, depth+1)
			for k, v := range in["properties"].(schema) {
				props[k] = v
			}
			if r, ok := in["required"].([]string); ok {
				required = append(required, r...)
			}
			continue
		}
		ts := markers[t.PkgPath()+"."+t.Name()+"."+f.Name]
		fs := of(f.Type, depth+1)
		apply(fs, ts)
		props[jname] = fs
		_, opt := tag(ts, "+optional")
		_, req := tag(ts, "+required")
		if req || !opt && !strings.Contains(opts, "omitempty") {
			required = append(required, jname)
		}
	}
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

type kind struct {
	obj        any
	plural     string
	namespaced bool
	selectable []string
}

func crd(k kind) schema {
	t := reflect.TypeOf(k.obj)
	props := schema{
		"apiVersion": schema{"type": "string"},
		"kind":       schema{"type": "string"},
		"metadata":   schema{"type": "object"},
	}
	var required []string
	for _, f := range []string{"Spec", "Status"} {
		sf, ok := t.FieldByName(f)
		if !ok {
			continue
		}
		jname, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		props[jname] = of(sf.Type, 0)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, jname)
		}
	}
	top := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		top["required"] = required
	}
	version := schema{
		"name": "v1", "served": true, "storage": true,
		"schema": schema{"openAPIV3Schema": top},
	}
	if _, ok := props["status"]; ok {
		version["subresources"] = schema{"status": schema{}}
	}
	if len(k.selectable) > 0 {
		var sel []schema
		for _, p := range k.selectable {
			sel = append(sel, schema{"jsonPath": p})
		}
		version["selectableFields"] = sel
	}
	scope := "Cluster"
	if k.namespaced {
		scope = "Namespaced"
	}
	return schema{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": schema{"name": k.plural + "." + resourcev1.GroupName,
			// The API server refuses CRDs in *.k8s.io groups without it: DRA's KEP.
			"annotations": schema{"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/issues/4381"}},
		"spec": schema{
			"group": resourcev1.GroupName,
			"names": schema{"plural": k.plural, "singular": strings.ToLower(t.Name()),
				"kind": t.Name(), "listKind": t.Name() + "List"},
			"scope":    scope,
			"versions": []schema{version},
		},
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdgen OUTDIR (in the GOPATH's src directory)")
		os.Exit(2)
	}
	kinds := []kind{
		// The kube-apiserver serves these two field selectors on ResourceSlices.
		{resourcev1.ResourceSlice{}, "resourceslices", false, []string{".spec.nodeName", ".spec.driver"}},
		{resourcev1.ResourceClaim{}, "resourceclaims", true, nil},
		{resourcev1.DeviceClass{}, "deviceclasses", false, nil},
		{resourcev1.ResourceClaimTemplate{}, "resourceclaimtemplates", true, nil},
	}
	for _, k := range kinds {
		c := crd(k)
		b, err := json.MarshalIndent(c, "", " ")
		if err == nil {
			err = os.WriteFile(filepath.Join(os.Args[1], k.plural+".json"), append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "crdgen: %s: %v\n", k.plural, err)
			os.Exit(1)
		}
		fmt.Printf("crdgen: %s\n", k.plural)
	}
}
