package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// inspector walks the YAML tree against the Config type. It collects every unknown key and
// every value of the wrong type, each with its line, and records the line of every known
// key so later validation messages can point at the file too.
type inspector struct {
	file     string
	lines    map[string]int // key path ("channels.telegram.token", "access.approvers[1]") -> line
	problems []string
}

func (in *inspector) add(line int, format string, args ...any) {
	in.problems = append(in.problems, locate(in.file, line, fmt.Sprintf(format, args...)))
}

func (in *inspector) walk(n ast.Node, t reflect.Type, path string) {
	n = unwrapNode(n)
	switch n.(type) {
	case nil, *ast.NullNode:
		return // a null keeps the default
	case *ast.AliasNode:
		return // the decoder resolves aliases; what it rejects there still carries a line
	}
	line := nodeLine(n)
	switch t.Kind() {
	case reflect.Struct:
		m, ok := n.(ast.MapNode)
		if !ok {
			in.add(line, "%s: expected a section of key: value lines, got %s", sectionName(path), describeNode(n))
			return
		}
		in.mapping(m, t, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			in.add(line, "%s: expected a list such as [a, b], got %s", path, describeNode(n))
			return
		}
		for i, v := range seq.Values {
			elem := fmt.Sprintf("%s[%d]", path, i)
			if l := nodeLine(v); l > 0 {
				in.lines[elem] = l
			}
			in.walk(v, t.Elem(), elem)
		}
	default:
		if !decodes(n, t) {
			hint := ""
			if _, isMap := n.(ast.MapNode); isMap && t.Kind() == reflect.String {
				// Quotes fix both a real "a: b" and goccy/go-yaml#832: v1.19 reads the
				// plain a:b in a [...] nested in {...} as a mapping.
				hint = " (put quotes around text that contains a colon)"
			}
			in.add(line, "%s: expected %s, got %s%s", path, expectedValue(t), describeNode(n), hint)
		}
	}
}

// decodes reports whether n can be read as a t. It is stricter than goccy, which
// truncates 1.5 to 1 for a whole number.
func decodes(n ast.Node, t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, frac := n.(*ast.FloatNode); frac && t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64 {
		return false
	}
	return yaml.NodeToValue(n, reflect.New(t).Interface()) == nil
}

func (in *inspector) mapping(m ast.MapNode, t reflect.Type, path string) {
	keys := yamlKeys(t)
	it := m.MapRange()
	for it.Next() {
		k := it.Key()
		if k.IsMergeKey() || k.GetToken() == nil {
			continue // "<<: *anchor" is resolved by the decoder
		}
		name, line := k.GetToken().Value, k.GetToken().Position.Line
		f, ok := yamlField(t, name)
		if !ok {
			in.add(line, "unknown key %q %s%s", name, where(path), suggest(name, keys))
			continue
		}
		child := joinKey(path, name)
		in.lines[child] = line
		in.walk(it.Value(), f.Type, child)
	}
}

// unwrapNode looks through tags (!!str) and anchors (&name) to the value they mark.
func unwrapNode(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

func nodeLine(n ast.Node) int {
	if n == nil || reflect.ValueOf(n).IsNil() || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

// describeNode names what the file holds, quoting short scalars. (Secrets are text, and
// text fields take any scalar, so no secret reaches this.)
func describeNode(n ast.Node) string {
	switch v := n.(type) {
	case ast.MapNode:
		return "a section"
	case *ast.SequenceNode:
		return "a list"
	case *ast.LiteralNode:
		return "a block of text"
	case ast.ScalarNode:
		s := v.GetToken().Value
		if utf8.RuneCountInString(s) > 40 {
			s = string([]rune(s)[:40]) + "..."
		}
		return fmt.Sprintf("%q", s)
	default:
		return "a " + n.Type().YAMLName()
	}
}

func expectedValue(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "a duration such as 30s, 10m or 1h"
	case reflect.TypeFor[Age]():
		return "an age such as 90d, 48h or 0 (keep forever)"
	case reflect.TypeFor[ByteSize]():
		return "a size such as 1MiB, 512KiB or 1048576 (bytes)"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expectedValue(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "text"
	default:
		return t.String()
	}
}

func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

func sectionName(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

func joinKey(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// yamlName is the key a struct field is read from; "" for fields not in the file.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func yamlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if yamlName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// suggest offers the closest valid key, or lists them all when none is close.
func suggest(name string, keys []string) string {
	norm := strings.NewReplacer("_", "", "-", "")
	best, bestDist := "", -1
	for _, k := range keys {
		if strings.EqualFold(norm.Replace(k), norm.Replace(name)) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
		if d := editDistance(name, k); bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist >= 0 && bestDist <= 1+utf8.RuneCountInString(name)/4 {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (valid keys: %s)", strings.Join(keys, ", "))
}

// editDistance counts insertions, deletions, substitutions and adjacent swaps, so that
// "tokne" is one edit from "token".
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// expandEnv replaces ${NAME} in every string value, then makes every path (a field tagged
// config:"path", in any section) relative to dir, the config file's directory, so plangate
// behaves the same whatever directory it is started from. It runs after decoding, so a
// variable's value can never change the YAML structure. It records which variables each
// key used, so a missing secret can be reported by the name the user has to set.
func (c *Config) expandEnv(getenv func(string) string, dir string) []problem {
	c.origins = map[string][]string{}
	var probs []problem
	expand := func(s, path string) string {
		out, vars, ok := expandRefs(s, getenv)
		if !ok {
			probs = append(probs, problem{path, path + " has a malformed ${...} reference: write ${NAME}"})
		}
		if len(vars) > 0 {
			c.origins[path] = vars
		}
		return out
	}
	var visit func(v reflect.Value, path string)
	visit = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Struct:
			for f, fv := range v.Fields() {
				if name := yamlName(f); name != "" {
					visit(fv, joinKey(path, name))
				}
				if p := fv.String(); f.Tag.Get("config") == "path" && p != "" && !filepath.IsAbs(p) {
					fv.SetString(filepath.Join(dir, p))
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				visit(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Map: // name: value sections such as channels.web.users
			if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.String {
				return
			}
			for _, k := range v.MapKeys() {
				s := expand(v.MapIndex(k).String(), joinKey(path, k.String()))
				v.SetMapIndex(k, reflect.ValueOf(s).Convert(v.Type().Elem()))
			}
		case reflect.String:
			v.SetString(expand(v.String(), path))
		}
	}
	visit(reflect.ValueOf(c).Elem(), "")
	for _, r := range channelTable {
		if r.afterPaths != nil {
			r.afterPaths(c)
		}
	}
	return probs
}

// expandRefs expands ${NAME} references; an unset variable expands to "". ok is false when
// a "${" does not start a well-formed reference (it is then kept as written).
func expandRefs(s string, getenv func(string) string) (out string, vars []string, ok bool) {
	var b strings.Builder
	ok = true
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), vars, ok
		}
		b.WriteString(s[:i])
		name, rest, closed := strings.Cut(s[i+2:], "}")
		if !closed || !isEnvName(name) {
			ok = false
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		vars = append(vars, name)
		b.WriteString(getenv(name))
		s = rest
	}
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
