package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// render turns a tool result into the text the model sees: text content joined, images,
// audio and resources named but not inlined (a model reads text; the bytes would only
// eat its context). Truncation is the engine's, like for every tool result.
func render(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s%s, not inlined]", c.URI, named(c.Name)))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				parts = append(parts, fmt.Sprintf("[resource %s (%s), not inlined]", r.URI, orUnknown(r.MIMEType)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content, not shown]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

func named(n string) string {
	if n == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", n)
}
