// Command mcpserver is testserver over stdio, for the end-to-end tests of core/mcp. The
// crash tool exits the process, freeze stops it (SIGSTOP); each start appends a line to
// $MCPSERVER_STARTS and each call the tool's name to $MCPSERVER_CALLS, when set.
package main

import (
	"context"
	"log"
	"os"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plangate/plangate/core/mcp/testdata/testserver"
)

func main() {
	if f := os.Getenv("MCPSERVER_STARTS"); f != "" {
		appendLine(f, "start")
	}
	counts := &testserver.Counts{}
	if f := os.Getenv("MCPSERVER_CALLS"); f != "" {
		counts.OnCall = func(tool string) { appendLine(f, tool) }
	}
	s := testserver.New(counts, func() { os.Exit(3) })
	testserver.AddFreeze(s, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) })
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Print(err)
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		log.Fatal(err)
	}
}
