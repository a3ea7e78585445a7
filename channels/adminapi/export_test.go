package adminapi

// Routes are the API's routes as "METHOD /path" with the query parameters each takes,
// for the test that holds the OpenAPI document to them.
func Routes() map[string][]string {
	out := map[string][]string{}
	for _, rt := range (&API{}).routes() {
		out[rt.method+" "+rt.path] = rt.query
	}
	return out
}
