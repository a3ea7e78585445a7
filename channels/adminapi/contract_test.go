package adminapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/plangate/plangate/channels/httpserver"
)

// contract is the OpenAPI document (openapi.json) as a validator every answer the tests
// get goes through (env.do), and the documented answers seen so far.
var contract = sync.OnceValues(func() (*openAPIContract, error) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing openapi.json: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("building the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapi.json is not a valid OpenAPI document: %s", describe(verrs))
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("building the model: %w", err)
	}
	c := &openAPIContract{raw: raw, v: v, mux: http.NewServeMux(), documented: map[string]bool{}, seen: map[string]bool{},
		params: map[string][]string{}, schemas: map[string]*base.Schema{}}
	for name, proxy := range model.Model.Components.Schemas.FromOldest() {
		c.schemas[name] = proxy.Schema()
	}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			pattern := strings.ToUpper(method) + " " + path
			c.mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
			c.params[pattern] = []string{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					c.params[pattern] = append(c.params[pattern], p.Name)
				}
			}
			for code := range op.Responses.Codes.KeysFromOldest() {
				c.documented[pattern+" "+code] = true
			}
		}
	}
	return c, nil
})

type openAPIContract struct {
	raw        []byte
	v          validator.Validator
	mux        *http.ServeMux      // the documented routes, matched as the server matches them
	params     map[string][]string // "METHOD /path" → its query parameters
	documented map[string]bool     // "METHOD /path status"
	schemas    map[string]*base.Schema

	mu   sync.Mutex
	seen map[string]bool
}

// check fails t unless the answer (code, body, hdr) to the request is what the document
// says: a documented route's answer matches its response for the status (and a 2xx
// answers a request the document accepts); any other path or method is a 404 or 405
// with the Error body.
func (c *openAPIContract) check(t *testing.T, method, url, reqBody string, reqHdr http.Header, code int, body string, hdr http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = reqHdr.Clone()
	_, pattern := c.mux.Handler(req)
	if pattern == "" {
		var e httpserver.ErrorJSON
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if (code != 404 && code != 405) || dec.Decode(&e) != nil || e.Code != httpserver.ErrorCode(code) || e.Error == "" {
			t.Errorf("%s %s is no documented route, yet answered %d %s (want 404 or 405 with an Error body)", method, url, code, body)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock() // the validator's caches are not for concurrent use
	resp := &http.Response{StatusCode: code, Header: hdr, Body: io.NopCloser(strings.NewReader(body)), Request: req}
	if ok, errs := c.v.ValidateHttpResponse(req, resp); !ok {
		t.Errorf("%s %s answered %d %.300s\nwhich the document does not describe: %s", method, url, code, body, describe(errs))
	}
	if code < 300 {
		req.Body = io.NopCloser(strings.NewReader(reqBody))
		if ok, errs := c.v.ValidateHttpRequest(req); !ok {
			t.Errorf("%s %s %.200s was served %d, yet the document refuses the request: %s", method, url, reqBody, code, describe(errs))
		}
	}
	c.seen[pattern+" "+strconv.Itoa(code)] = true
}

// unseen are the documented answers no test produced.
func (c *openAPIContract) unseen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.documented {
		if !c.seen[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// describe lists the validator's findings, one a line, with the fields they are about.
func describe(errs []*verrors.ValidationError) string {
	var b bytes.Buffer
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s: %s", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}

// TestMain adds one check after a run of the whole package: every response the document
// gives a route was produced and validated by some test.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	whole := flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" &&
		flag.Lookup("test.fuzz").Value.String() == "" && !testing.Short()
	if c, err := contract(); code == 0 && whole && err == nil {
		if missing := c.unseen(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: documented answers no test produced and validated:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}
