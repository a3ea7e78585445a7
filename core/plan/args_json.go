package plan

// Strict decoding of tool arguments, with advice the model can act on.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// argObject checks that args is one JSON object and returns its members.
func argObject(tool string, args json.RawMessage) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, fmt.Errorf("%s: the arguments are empty; send a JSON object", tool)
	}
	m, ok := argMap(args)
	if !ok {
		if !json.Valid(args) {
			return nil, fmt.Errorf("%s: the arguments are not valid JSON; send one JSON object", tool)
		}
		return nil, fmt.Errorf("%s: the arguments must be a JSON object, not %s", tool, jsonKind(args))
	}
	return m, nil
}

func argMap(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// itemFields names the unknown fields of the objects in the JSON array raw, as where[i],
// in order; anything else is left for the typed decode to report.
func itemFields(tool, where string, raw json.RawMessage, known []string) []string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var problems []string
	for i, it := range items {
		if m, ok := argMap(it); ok {
			problems = append(problems, unknownFields(tool, fmt.Sprintf("%s[%d]", where, i), m, known)...)
		}
	}
	return problems
}

// unknownFields names every member of obj that is not in known, with a hint when the name
// is a common confusion.
func unknownFields(tool, where string, obj map[string]json.RawMessage, known []string) []string {
	var names []string
	for k := range obj {
		if !slices.Contains(known, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	place := cmp.Or(where, "the arguments")
	var problems []string
	for _, k := range names {
		p := fmt.Sprintf("%s: unknown field %q in %s", tool, k, place)
		if h := fieldHint(k); h != "" && slices.Contains(known, h) {
			p += fmt.Sprintf(" (did you mean %q?)", h)
		}
		problems = append(problems, p+"; allowed: "+strings.Join(known, ", "))
	}
	return problems
}

// decodeStrict decodes one JSON value into v and turns decoding errors into advice.
func decodeStrict(tool string, args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: field %q must be %s, not %s", tool, te.Field, describeType(te.Type), jsonArticle(te.Value))
		}
		return fmt.Errorf("%s: reading the arguments: %w", tool, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s: the arguments must be a single JSON object with nothing after it", tool)
	}
	return nil
}

// describeType names the JSON form of a Go type, as the model sees it in the schema.
func describeType(t reflect.Type) string {
	switch {
	case t == nil:
		return "a different type"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Slice:
		return jsonArticle("array")
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return jsonArticle("object")
	}
	return jsonArticle(t.Kind().String())
}

// jsonArticle turns a JSON kind ("array") or Go kind ("bool") into words ("an array").
func jsonArticle(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	case "null":
		return v
	}
	return "a " + v
}

func jsonKind(raw json.RawMessage) string {
	var v any
	_ = json.Unmarshal(raw, &v)
	switch v.(type) {
	case []any:
		return jsonArticle("array")
	case string:
		return jsonArticle("string")
	case bool:
		return jsonArticle("bool")
	case nil:
		return "null"
	}
	return jsonArticle("number")
}

// trimList trims every entry and drops the empty ones.
func trimList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func quoteList(in []string) string {
	q := make([]string, len(in))
	for i, s := range in {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// Problems is an error made of one problem per line.
type Problems []string

// maxProblems and maxProblemLen bound the text of Problems: it goes back to the
// model or to the chat, and a hostile plan (10,000 identical steps) must not turn into a
// megabyte of refusal.
const (
	maxProblems   = 20
	maxProblemLen = 500 // characters per problem line
)

func (p Problems) Error() string {
	lines := make([]string, 0, min(len(p), maxProblems)+1)
	for _, l := range p[:min(len(p), maxProblems)] {
		lines = append(lines, clipLine(l, maxProblemLen))
	}
	if n := len(p) - maxProblems; n > 0 {
		lines = append(lines, fmt.Sprintf("(and %d more problems; fix these first)", n))
	}
	return strings.Join(lines, "\n")
}

// clipLine cuts s to at most n characters, marking the cut.
func clipLine(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
