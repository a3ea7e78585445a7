package core

// ToolServerDown is the error of a tool call whose server stopped during it (an MCP
// server that crashed mid-call, or hung). The model sees Msg as the tool error and the
// turn goes on; the chat is told once per job that the server's tools are withdrawn.
type ToolServerDown struct {
	Server string
	Msg    string
}

func (e *ToolServerDown) Error() string { return e.Msg }
