package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// The reply's sendMessage is sent here rather than by the library. The library builds
// every request's multipart body in a goroutine of its own writing into a pipe (sent
// chunked): one goroutine start per reply, which on a mostly idle process also woke an
// idle P and its thread. This sends the same fields as a urlencoded form built in place
// (the Bot API takes both) and answers with the library's error values, which
// classify, isEntityError and the callers read.

// sendMessageForm is sendMessage's fields as the library sends them: absent when zero,
// objects as JSON.
func sendMessageForm(chat int64, thread int, text string, mode models.ParseMode, markup models.ReplyMarkup) (url.Values, error) {
	form := url.Values{
		"chat_id":              {strconv.FormatInt(chat, 10)},
		"text":                 {text},
		"link_preview_options": {`{"is_disabled":true}`},
	}
	if thread != 0 {
		form.Set("message_thread_id", strconv.Itoa(thread))
	}
	if mode != "" {
		form.Set("parse_mode", string(mode))
	}
	if markup != nil {
		m, err := json.Marshal(markup)
		if err != nil {
			return nil, fmt.Errorf("encoding the reply markup: %w", err)
		}
		form.Set("reply_markup", string(m))
	}
	return form, nil
}

// apiAnswer is the Bot API's envelope.
type apiAnswer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	Description string          `json:"description"`
	ErrorCode   int             `json:"error_code"`
	Parameters  struct {
		RetryAfter      int `json:"retry_after"`
		MigrateToChatID int `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// post makes one Bot API request with a urlencoded form and decodes its result into dest.
// Its errors read as the library's (wrapping the same values), the token scrubbed.
func (c *Channel) post(ctx context.Context, method string, form url.Values, dest any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/bot"+c.token+"/"+method, strings.NewReader(form.Encode()))
	if err != nil {
		return c.scrub(fmt.Errorf("error create request for method %s, %w", method, err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	if err != nil {
		return c.scrub(fmt.Errorf("error do request for method %s, %w", method, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return c.scrub(fmt.Errorf("error read response body for method %s, %w", method, err))
	}
	var a apiAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("error decode response body for method %s, %s, %w", method, c.scrubText(string(body)), err)
	}
	if !a.OK {
		return answerError(method, &a)
	}
	if dest != nil && !bytes.Equal(a.Result, []byte("null")) {
		if err := json.Unmarshal(a.Result, dest); err != nil {
			return fmt.Errorf("error decode response result for method %s, %w", method, err)
		}
	}
	return nil
}

// answerError is a refusal as the library reports it.
func answerError(method string, a *apiAnswer) error {
	switch a.ErrorCode {
	case http.StatusForbidden:
		return fmt.Errorf("%w, %s", bot.ErrorForbidden, a.Description)
	case http.StatusBadRequest:
		if a.Parameters.MigrateToChatID != 0 {
			return &bot.MigrateError{Message: fmt.Sprintf("%s: %s", bot.ErrorBadRequest, a.Description), MigrateToChatID: a.Parameters.MigrateToChatID}
		}
		return fmt.Errorf("%w, %s", bot.ErrorBadRequest, a.Description)
	case http.StatusUnauthorized:
		return fmt.Errorf("%w, %s", bot.ErrorUnauthorized, a.Description)
	case http.StatusNotFound:
		return fmt.Errorf("%w, %s", bot.ErrorNotFound, a.Description)
	case http.StatusConflict:
		return fmt.Errorf("%w, %s", bot.ErrorConflict, a.Description)
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: fmt.Sprintf("%s, %s", bot.ErrorTooManyRequests, a.Description), RetryAfter: a.Parameters.RetryAfter}
	}
	return fmt.Errorf("error response from telegram for method %s, %d %s", method, a.ErrorCode, a.Description)
}
