package telegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf16"
)

// normMarkup treats no keyboard and an empty one alike, as Telegram shows them.
func normMarkup(s string) string {
	if s == "" || s == `{"inline_keyboard":[]}` {
		return ""
	}
	return s
}

// parseParams reads multipart, urlencoded or JSON parameters as strings, the way the Bot
// API accepts them; the first file part is returned with its content.
func parseParams(r *http.Request) (params map[string]string, file, data string, err error) {
	params = map[string]string{}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, "", "", err
	}
	if len(body) == 0 {
		return params, "", "", nil // a method without parameters (getMe)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, "", "", err
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		for _, fhs := range r.MultipartForm.File {
			fh := fhs[0]
			rd, err := fh.Open()
			if err != nil {
				return nil, "", "", err
			}
			b, _ := io.ReadAll(rd)
			rd.Close()
			file, data = fh.Filename, string(b)
		}
	case "application/json":
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, "", "", err
		}
		for k, v := range m {
			if s, ok := v.(string); ok {
				params[k] = s
				continue
			}
			b, _ := json.Marshal(v)
			params[k] = string(b)
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, "", "", err
		}
		for k, v := range r.PostForm {
			params[k] = v[0]
		}
	}
	return params, file, data, nil
}

// checkText validates text in parse mode mode and returns what a chat would show. For
// HTML it applies Telegram's rules: only its tags, balanced, and no bare < or &.
func checkText(s, mode string) (visible, problem string) {
	if mode == "" {
		return s, ""
	}
	if mode != "HTML" {
		return "", "unsupported parse mode " + mode
	}
	allowed := map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
		"strike": true, "del": true, "span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true,
		"blockquote": true, "tg-emoji": true}
	var b strings.Builder
	var stack []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return "", fmt.Sprintf("unclosed start tag at byte offset %d", i)
			}
			tag := s[i+1 : i+j]
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Sprintf("unmatched end tag %q at byte offset %d", name, i)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, _, _ := strings.Cut(tag, " ")
				if !allowed[name] {
					return "", fmt.Sprintf("unsupported start tag %q at byte offset %d", name, i)
				}
				stack = append(stack, name)
			}
			i += j + 1
		case '&':
			j := strings.IndexByte(s[i:], ';')
			if j < 0 || j > 10 {
				return "", fmt.Sprintf("bare & at byte offset %d", i)
			}
			ent := s[i : i+j+1]
			dec := html.UnescapeString(ent)
			if dec == ent {
				return "", fmt.Sprintf("unknown entity %q at byte offset %d", ent, i)
			}
			b.WriteString(dec)
			i += j + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Sprintf("can't find end tag corresponding to start tag %q", stack[len(stack)-1])
	}
	return b.String(), ""
}

func checkMarkup(s string) string {
	if s == "" {
		return ""
	}
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
		ForceReply *bool `json:"force_reply"`
	}
	if err := json.Unmarshal([]byte(s), &kb); err != nil {
		return "can't parse reply keyboard markup JSON object"
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				return "text buttons are unallowed in the inline keyboard"
			}
			if len(b.CallbackData) > 64 || b.CallbackData == "" {
				return "BUTTON_DATA_INVALID"
			}
		}
	}
	return ""
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
