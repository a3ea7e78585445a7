package adminapi

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 description of every admin route, written by hand beside the
// handlers (the tests validate each route's real answers against it).
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
