package secrets_test

import (
	"encoding/base64"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/plangate/plangate/core"
	"github.com/plangate/plangate/core/secrets"
)

// Fake credentials of the shapes the rules know, assembled so that this file itself holds
// none whole.
var (
	awsKey    = "AKIA" + "Z7VRSQ5TLXJ4QPNC"
	githubPAT = "ghp_" + "R8x2Lm4QvT9zKp3WnY7cJd5HsB1fGa6EuXo0"
	stripeKey = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	rsaKey    = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA1Bx3bIhW2ZtZl8z8k8cQJ3aLqG3LJYQ0pY9c8h3l1v8Q2n1e\n" +
		"Q2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1eQ2n1\n-----END RSA " + "PRIVATE KEY-----\n"
)

func newScanner(t testing.TB) *secrets.Scanner {
	t.Helper()
	s, err := secrets.New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScanFindsAndRedacts(t *testing.T) {
	s := newScanner(t)
	if s.Rules() < 100 {
		t.Fatalf("%d rules, want gitleaks' default set", s.Rules())
	}
	cases := []struct {
		name, text, rule, secret string
		line                     int
	}{
		{"aws", "region = eu\naws_access_key_id = " + awsKey + "\n", "aws-access-token", awsKey, 2},
		{"github", "GITHUB_TOKEN=" + githubPAT, "github-pat", githubPAT, 1},
		{"stripe", "const key = \"" + stripeKey + "\"\n", "stripe-access-token", stripeKey, 1},
		{"private key", "# deploy\n" + rsaKey, "private-key", "", 2},
		// The agent's "allow" comment does not count.
		{"allow comment", "key := \"" + awsKey + "\" // gitleaks:allow\n", "aws-access-token", awsKey, 1},
		// Encoded once, found all the same; the line is hidden.
		{"base64", "one\nblob: " + base64.StdEncoding.EncodeToString([]byte("aws_access_key_id="+awsKey)) + "\nthree\n", "aws-access-token", "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := s.Scan(c.text)
			var hit *core.Secret
			for i := range found {
				if found[i].Rule == c.rule {
					hit = &found[i]
				}
			}
			if hit == nil {
				t.Fatalf("found %+v, want %s", found, c.rule)
			}
			if hit.Line != c.line {
				t.Errorf("line %d, want %d", hit.Line, c.line)
			}
			red := core.RedactSecrets(c.text, found)
			for _, leak := range []string{awsKey, githubPAT, stripeKey, "MIIEowIBAAKCAQEA", base64.StdEncoding.EncodeToString([]byte("aws_access_key_id=" + awsKey))} {
				if strings.Contains(red, leak) {
					t.Fatalf("redacted text still holds %q:\n%s", leak, red)
				}
			}
			if !strings.Contains(red, core.Redacted(c.rule)) {
				t.Errorf("redacted text does not say what was hidden:\n%s", red)
			}
			if strings.Contains(core.SecretsList(found), c.secret) && c.secret != "" {
				t.Error("the list of secrets shows a secret")
			}
		})
	}
}

// Ordinary code and prose, placeholders and the documentation's example keys are not
// secrets.
func TestScanQuietOnOrdinaryText(t *testing.T) {
	s := newScanner(t)
	for _, text := range []string{
		"func main() {\n\tfmt.Println(\"hello\")\n}\n",
		"password = ${DB_PASSWORD}\napi_key: <your key here>\n",
		"aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
		"# Title\n\nThe token is read from the environment (TOKEN).\n",
		"",
	} {
		if found := s.Scan(text); len(found) != 0 {
			t.Errorf("Scan(%q) = %+v, want nothing", text, found)
		}
	}
}

// One scanner serves every session at once.
func TestScanConcurrently(t *testing.T) {
	s := newScanner(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if f := s.Scan("t=" + githubPAT); len(f) != 1 {
					t.Errorf("found %+v", f)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkScan64K scans a 64 KB write: plangate's own Go source (keywords such as
// "token" and "key" make the generic rule work) and plain prose.
func BenchmarkScan64K(b *testing.B) {
	s := newScanner(b)
	var src []byte
	for _, f := range []string{"../engine/turn.go", "../engine/tools_gate.go", "../tools/run.go", "../tools/tools.go", "../engine/toolruns.go", "../engine/engine.go"} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		src = append(src, data...)
	}
	if len(src) < 64<<10 {
		b.Fatalf("only %d bytes of source", len(src))
	}
	texts := map[string]string{
		"go-source": string(src[:64<<10]),
		"prose":     strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 64<<10/45+1)[:64<<10],
	}
	for name, text := range texts {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Scan(text)
			}
		})
	}
}
