package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// configKey is one key the config file accepts, with its default before ${VAR} expansion.
type configKey struct {
	path string
	def  reflect.Value
}

// configKeys lists every key in v (defaultConfig() at the top), as dotted paths in field
// order.
func configKeys(v reflect.Value, path string) []configKey {
	var keys []configKey
	for f, fv := range v.Fields() {
		name := yamlName(f)
		if name == "" {
			continue
		}
		key := joinKey(path, name)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			keys = append(keys, configKeys(fv, key)...)
			continue
		}
		keys = append(keys, configKey{key, fv})
	}
	return keys
}

// readmeRows maps each key of README.md's configuration table to its default cell.
func readmeRows(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+(?:\\.[a-z_]+)+)` \\| ([^|]*) \\|").FindAllSubmatch(readme, -1) {
		rows[string(m[1])] = string(m[2])
	}
	return rows
}

// TestReadmeDocumentsEveryKey keeps the README's configuration table and the config types
// (cmd/plangate's and each adapter's) in step: an option added to an adapter's config.go
// must get its row with its default, and a row must not outlive its key.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	rows := readmeRows(t)
	keys := configKeys(reflect.ValueOf(*defaultConfig()), "")
	if len(keys) < 40 {
		t.Fatalf("found only %d config keys: the walk is broken", len(keys))
	}
	firstCode := regexp.MustCompile("^`([^`]*)`")
	for _, k := range keys {
		cell, ok := rows[k.path]
		if !ok {
			t.Errorf("README.md has no row for config key %s", k.path)
			continue
		}
		m := firstCode.FindStringSubmatch(cell)
		if m == nil {
			continue // a default in words, such as "unset"
		}
		got := reflect.New(k.def.Type())
		if err := yaml.Unmarshal([]byte(m[1]), got.Interface()); err != nil {
			t.Errorf("README.md default of %s, %s, does not read as %s: %v", k.path, m[1], k.def.Type(), err)
			continue
		}
		if !sameDefault(got.Elem(), k.def) {
			t.Errorf("README.md says %s defaults to %s; the code says %v", k.path, m[1], k.def)
		}
	}
	paths := make([]string, 0, len(keys))
	for _, k := range keys {
		paths = append(paths, k.path)
	}
	for d := range rows {
		if !slices.Contains(paths, d) {
			t.Errorf("README.md documents %s, which the config does not accept", d)
		}
	}
}

// sameDefault compares a README default with the code's; an empty list and none agree.
func sameDefault(readme, code reflect.Value) bool {
	if readme.Kind() == reflect.Slice && readme.Len() == 0 && code.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(readme.Interface(), code.Interface())
}
