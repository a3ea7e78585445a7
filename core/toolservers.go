package core

// What a Toolbox reports of its tool servers.

// ToolServerDown is the error of a tool call whose server stopped during it (an MCP
// server that crashed mid-call, or hung). The model sees Msg as the tool error and the
// turn goes on; the chat is told once per job that the server's tools are withdrawn.
type ToolServerDown struct {
	Server string
	Msg    string
}

func (e *ToolServerDown) Error() string { return e.Msg }

// ToolServers is what a Toolbox may implement to tell a tool that is not offered because
// its server is down (an MCP server that failed to start or died) from one that does not
// exist: the model gets the server's state instead of "unknown tool", and the chat hears
// that the server stopped.
type ToolServers interface {
	// Withdrawn reports the server of tool and its state when the server is configured
	// but not up.
	Withdrawn(tool string) (server, status string, ok bool)
}
