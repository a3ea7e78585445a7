// Package secrets finds credentials in text with gitleaks' default rule set (its detect
// package and the rules it ships: some 220 patterns for cloud keys, tokens, private keys
// and generic API keys, each with keywords, entropy limits and allowlists kept by that
// project). The engine asks it about what the agent is about to write and about what a
// command printed; core defines the port (core.SecretScanner).
package secrets

import (
	"fmt"
	"strings"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/plangate/plangate/core"
)

// DecodeDepth is how many rounds of decoding (base64, hex, percent-encoding) a text gets
// before its rules are matched again, as gitleaks' own command does by default: a secret
// written encoded is found too.
const DecodeDepth = 5

// Scanner is a core.SecretScanner over gitleaks' default rules. It is safe for
// concurrent use: a scan only reads the compiled rules.
type Scanner struct {
	d *detect.Detector
}

var _ core.SecretScanner = (*Scanner)(nil)

// New compiles the default rules (some 50 ms; do it once per process).
func New() (*Scanner, error) {
	// A viper of its own: the package-level one is shared state.
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("reading gitleaks' default rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("decoding gitleaks' default rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("compiling gitleaks' default rules: %w", err)
	}
	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = DecodeDepth
	// A "gitleaks:allow" comment is the writer's word that a line is fine; the writer here
	// is the agent, whose word does not count.
	d.IgnoreGitleaksAllow = true
	return &Scanner{d: d}, nil
}

// Rules is the number of rules the scanner applies.
func (s *Scanner) Rules() int { return len(s.d.Config.Rules) }

// Scan returns the secrets in text, in the order found.
func (s *Scanner) Scan(text string) []core.Secret {
	if text == "" {
		return nil
	}
	fs := s.d.DetectString(text)
	if len(fs) == 0 {
		return nil
	}
	out := make([]core.Secret, 0, len(fs))
	for _, f := range fs {
		sec := core.Secret{Rule: f.RuleID, Line: f.StartLine + 1, EndLine: f.EndLine + 1}
		if strings.Contains(text, f.Secret) && f.Secret != "" {
			sec.Text = f.Secret
		} else if f.Match != "" && strings.Contains(text, f.Match) {
			sec.Text = f.Match
		}
		out = append(out, sec)
	}
	return out
}
