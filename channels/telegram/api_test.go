package telegram

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// The adapter's own sendMessage request carries the fields the library sent (absent when
// zero), and its refusals are the library's error values, which classify and the
// plain-text fallback read.
func TestSendMessageFormAndRefusals(t *testing.T) {
	form, err := sendMessageForm(42, 0, "hi <b>", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if form.Get("chat_id") != "42" || form.Get("text") != "hi <b>" || form.Get("link_preview_options") != `{"is_disabled":true}` {
		t.Fatalf("form %v", form)
	}
	for _, k := range []string{"message_thread_id", "parse_mode", "reply_markup"} {
		if form.Has(k) {
			t.Fatalf("%s sent while zero: %v", k, form)
		}
	}
	kb := inlineKeyboard{InlineKeyboard: [][]inlineButton{{{Text: "Accept", CallbackData: "a:1"}}}}
	form, err = sendMessageForm(-7, 3, "x", models.ParseModeHTML, kb)
	if err != nil {
		t.Fatal(err)
	}
	if form.Get("message_thread_id") != "3" || form.Get("parse_mode") != "HTML" ||
		!strings.Contains(form.Get("reply_markup"), `"callback_data":"a:1"`) {
		t.Fatalf("form %v", form)
	}

	refuse := func(code int, desc string, retry, migrate int) error {
		a := &apiAnswer{ErrorCode: code, Description: desc}
		a.Parameters.RetryAfter, a.Parameters.MigrateToChatID = retry, migrate
		return answerError("sendMessage", a)
	}
	var tooMany *bot.TooManyRequestsError
	if err := refuse(429, "Too Many Requests: retry after 5", 5, 0); !errors.As(err, &tooMany) || tooMany.RetryAfter != 5 {
		t.Fatalf("429: %v", err)
	}
	if err := refuse(400, "Bad Request: can't parse entities", 0, 0); !isEntityError(err) {
		t.Fatalf("400 entities: %v", err)
	}
	var migrate *bot.MigrateError
	if err := refuse(400, "Bad Request: group chat was upgraded", 0, -100); !errors.As(err, &migrate) || migrate.MigrateToChatID != -100 {
		t.Fatalf("400 migrate: %v", err)
	}
	for code, want := range map[int]error{403: bot.ErrorForbidden, 401: bot.ErrorUnauthorized, 404: bot.ErrorNotFound, 409: bot.ErrorConflict} {
		if err := refuse(code, "no", 0, 0); !errors.Is(err, want) {
			t.Fatalf("%d: %v, want %v", code, err, want)
		}
	}
	if err := refuse(418, "teapot", 0, 0); err == nil || !strings.Contains(err.Error(), "418 teapot") {
		t.Fatalf("418: %v", err)
	}
}
