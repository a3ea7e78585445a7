package plan

import "testing"

func TestTokenWords(t *testing.T) {
	tests := []struct {
		t    Tokens
		want string
	}{
		{Tokens{}, "no model calls"},
		{Tokens{Calls: 3, Unreported: 3}, "tokens not reported"},
		{Tokens{Prompt: 40_600, Cached: 30_000, Completion: 400, Calls: 5}, "41k tokens, 30k cached"},
		{Tokens{Prompt: 900, Completion: 49, Calls: 1}, "949 tokens, 0 cached"},
		{Tokens{Prompt: 1_200_000, Cached: 1_000_000, Completion: 49_000, Calls: 9, Unreported: 1}, "1.2M tokens, 1M cached (1 call not reported)"},
		{Tokens{Prompt: 999_499, Calls: 2, Unreported: 1}, "999k tokens, 0 cached (1 call not reported)"},
		{Tokens{Prompt: 999_500, Calls: 2}, "1M tokens, 0 cached"},
	}
	for _, tt := range tests {
		if got := tt.t.Words(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.t, got, tt.want)
		}
	}
	sum := Tokens{Prompt: 1, Cached: 2, Completion: 3, Calls: 4, Unreported: 5}.Add(Tokens{Prompt: 10, Cached: 20, Completion: 30, Calls: 40, Unreported: 50})
	if sum != (Tokens{Prompt: 11, Cached: 22, Completion: 33, Calls: 44, Unreported: 55}) || sum.Total() != 44 {
		t.Errorf("sum %+v (total %d)", sum, sum.Total())
	}
}
