package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"
)

// configKeys lists every key the config file accepts, as dotted paths, in field order.
func configKeys(t reflect.Type, path string) []string {
	var keys []string
	for f := range t.Fields() {
		name := yamlName(f)
		if name == "" {
			continue
		}
		key := joinKey(path, name)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			keys = append(keys, configKeys(f.Type, key)...)
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// TestReadmeDocumentsEveryKey keeps the README's configuration table and the config types
// (cmd/plangate's and each adapter's) in step: an option added to an adapter's config.go
// must get its README row, and a row must not outlive its key.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+(?:\\.[a-z_]+)+)` \\|").FindAllSubmatch(readme, -1) {
		documented = append(documented, string(m[1]))
	}
	keys := configKeys(reflect.TypeFor[Config](), "")
	if len(keys) < 40 {
		t.Fatalf("found only %d config keys: the walk is broken", len(keys))
	}
	for _, k := range keys {
		if !slices.Contains(documented, k) {
			t.Errorf("README.md has no row for config key %s", k)
		}
	}
	for _, d := range documented {
		if !slices.Contains(keys, d) {
			t.Errorf("README.md documents %s, which the config does not accept", d)
		}
	}
}
