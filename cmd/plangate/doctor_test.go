package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakePlatforms answers the probes of plangate doctor as the model endpoint, Telegram,
// Slack and Discord would: each knows one good credential (the model: good-model).
func fakePlatforms(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/v1/models/"):
			if strings.TrimPrefix(p, "/v1/models/") != "good-model" {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
				return
			}
			io.WriteString(w, `{"id":"good-model","object":"model","created":1,"owned_by":"test"}`)
		case strings.HasSuffix(p, "/getMe"):
			if p != "/bot123:good-telegram/getMe" {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
				return
			}
			io.WriteString(w, `{"ok":true,"result":{"id":123,"is_bot":true,"first_name":"Plangate","username":"plangate_bot"}}`)
		case p == "/api/auth.test":
			_ = r.ParseForm()
			if r.Header.Get("Authorization") != "Bearer xoxb-good-slack" && r.Form.Get("token") != "xoxb-good-slack" {
				io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
				return
			}
			io.WriteString(w, `{"ok":true,"team":"Acme","team_id":"T1","user":"plangate","user_id":"U1"}`)
		case strings.HasSuffix(p, "/applications/@me"):
			if r.Header.Get("Authorization") != "Bot good-discord" {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"message":"401: Unauthorized","code":0}`)
				return
			}
			io.WriteString(w, `{"id":"42","name":"plangate"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func doctorConfig(url, model, planModel, tg, sl, dc, appID string) string {
	return fmt.Sprintf(`llm: {provider: openai, base_url: %q, api_key: sk-doctor-key, model: %s, plan_model: %q}
channels:
  terminal: {enabled: false}
  telegram: {enabled: true, token: %q, api_url: %q}
  slack: {enabled: true, bot_token: %q, app_token: xapp-1-doctor, api_url: %q}
  discord: {enabled: true, token: %q, application_id: %q, api_url: %q}
`, url+"/v1", model, planModel, tg, url, sl, url+"/api/", dc, appID, url)
}

func TestDoctorAllGood(t *testing.T) {
	srv := fakePlatforms(t)
	code, out, errOut := cli(t, "", "doctor", "--config", writeConfig(t, doctorConfig(srv.URL, "good-model", "", "123:good-telegram", "xoxb-good-slack", "good-discord", "42")))
	if code != 0 {
		t.Fatalf("doctor: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"ok   store: sqlite ", "does not exist yet",
		"ok   model: llm.model good-model at " + srv.URL,
		"ok   telegram: bot @plangate_bot (id 123)",
		"ok   slack: team Acme (T1), bot plangate (U1)",
		"ok   discord: application plangate (42)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// Each bad credential is one FAIL line saying what to fix; the others still run, the exit
// status is 1, and no token reaches the output.
func TestDoctorNamesEachProblem(t *testing.T) {
	srv := fakePlatforms(t)
	code, out, errOut := cli(t, "", "doctor", "--config", writeConfig(t, doctorConfig(srv.URL, "good-model", "gone-planner", "123:bad-telegram", "xoxb-bad-slack", "good-discord", "41")))
	if code != 1 || !strings.Contains(errOut, "4 of the checks failed") {
		t.Fatalf("doctor: %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		`FAIL model: llm.plan_model "gone-planner": the model endpoint at ` + srv.URL + ` does not have it (404); set llm.plan_model to a model it lists`,
		"FAIL telegram: telegram rejected the bot token; check channels.telegram.token",
		"FAIL slack: slack rejected the bot token (invalid_auth); check channels.slack.bot_token",
		"FAIL discord: the token belongs to application plangate (42), but channels.discord.application_id is 41",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"bad-telegram", "xoxb-bad-slack", "sk-doctor-key", "xapp-1-doctor", "good-discord"} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("the output shows the secret %q:\n%s", secret, out)
		}
	}

	code, out, _ = cli(t, "", "doctor", "--config", writeConfig(t, doctorConfig(srv.URL, "good-model", "", "123:good-telegram", "xoxb-good-slack", "bad-discord", "")))
	if code != 1 || !strings.Contains(out, "FAIL discord: discord rejected the bot token (401 Unauthorized); check channels.discord.token") {
		t.Fatalf("a bad discord token: %d\n%s", code, out)
	}
}

// `config check --probe` is the config check, then doctor's probes: a bad token fails it
// after "config ok"; without --probe the same config passes without asking anyone.
func TestConfigCheckProbe(t *testing.T) {
	srv := fakePlatforms(t)
	cfg := writeConfig(t, doctorConfig(srv.URL, "good-model", "", "123:bad-telegram", "xoxb-good-slack", "good-discord", "42"))
	code, out, errOut := cli(t, "", "config", "check", "--probe", "--config", cfg)
	if code != 1 || !strings.Contains(out, "config ok") || !strings.Contains(out, "FAIL telegram:") || !strings.Contains(out, "ok   slack:") ||
		!strings.Contains(errOut, "1 of the checks failed") {
		t.Fatalf("config check --probe: %d, stderr %q\n%s", code, errOut, out)
	}
	if code, out, errOut := cli(t, "", "config", "check", "--config", cfg); code != 0 || strings.Contains(out, "telegram:") && strings.Contains(out, "FAIL") {
		t.Fatalf("config check without --probe: %d %q\n%s", code, errOut, out)
	}
}
