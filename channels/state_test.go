package channels

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeState is an in-memory State whose reads and writes can be made to fail.
type fakeState struct {
	vals     map[string]string
	getErr   error
	setErr   error
	lastKey  string
	setCalls int
}

func (f *fakeState) ChannelState(_ context.Context, channel, account, key string) (string, bool, error) {
	if f.getErr != nil {
		return "", false, f.getErr
	}
	v, ok := f.vals[channel+"|"+account+"|"+key]
	return v, ok, nil
}

func (f *fakeState) SetChannelState(_ context.Context, channel, account, key, value string) error {
	f.setCalls++
	f.lastKey = key
	if f.setErr != nil {
		return f.setErr
	}
	if f.vals == nil {
		f.vals = map[string]string{}
	}
	f.vals[channel+"|"+account+"|"+key] = value
	return nil
}

func (f *fakeState) SetChannelStateLazy(ctx context.Context, channel, account, key, value string) error {
	return f.SetChannelState(ctx, channel, account, key, value)
}

func (f *fakeState) SetChannelStateWith(ctx context.Context, channel, account, key string, _ bool, value func() (string, error)) error {
	v, err := value()
	if err != nil {
		return err
	}
	return f.SetChannelState(ctx, channel, account, key, v)
}

type record struct {
	IDs     []int  `json:"ids"`
	Decided string `json:"decided,omitempty"`
}

func TestSaveThenLoadJSON(t *testing.T) {
	ctx := context.Background()
	st := &fakeState{}
	want := record{IDs: []int{3, 5}, Decided: "approved"}
	if err := SaveJSON(ctx, st, "telegram", "bot1", "approval:a1", want); err != nil {
		t.Fatalf("SaveJSON: %v", err)
	}
	if got := st.vals["telegram|bot1|approval:a1"]; got != `{"ids":[3,5],"decided":"approved"}` {
		t.Fatalf("stored %q", got)
	}
	got, ok, err := LoadJSON[record](ctx, st, "telegram", "bot1", "approval:a1")
	if err != nil || !ok {
		t.Fatalf("LoadJSON: ok=%v err=%v", ok, err)
	}
	if len(got.IDs) != 2 || got.IDs[0] != 3 || got.IDs[1] != 5 || got.Decided != "approved" {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
	// Another account does not see the record.
	if _, ok, err := LoadJSON[record](ctx, st, "telegram", "bot2", "approval:a1"); ok || err != nil {
		t.Fatalf("other account: ok=%v err=%v", ok, err)
	}
}

func TestLoadJSON(t *testing.T) {
	storeErr := errors.New("disk gone")
	tests := []struct {
		name    string
		st      *fakeState
		wantOK  bool
		wantErr string // substring; "" = no error
		isErr   error
	}{
		{name: "missing", st: &fakeState{}, wantOK: false},
		{name: "present", st: &fakeState{vals: map[string]string{"c|a|k1": `{"ids":[1]}`}}, wantOK: true},
		{name: "damaged", st: &fakeState{vals: map[string]string{"c|a|k1": `{"ids":`}}, wantErr: `decoding channel state "k1"`},
		{name: "wrong shape", st: &fakeState{vals: map[string]string{"c|a|k1": `[1,2]`}}, wantErr: `decoding channel state "k1"`},
		{name: "store fails", st: &fakeState{getErr: storeErr}, wantErr: `loading channel state "k1"`, isErr: storeErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := LoadJSON[record](context.Background(), tt.st, "c", "a", "k1")
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.isErr != nil && !errors.Is(err, tt.isErr) {
				t.Fatalf("err = %v does not wrap %v", err, tt.isErr)
			}
			if !ok && (got.IDs != nil || got.Decided != "") {
				t.Fatalf("not ok but returned %+v; want the zero value", got)
			}
		})
	}
}

func TestSaveJSONErrors(t *testing.T) {
	storeErr := errors.New("read-only")
	tests := []struct {
		name     string
		st       *fakeState
		v        any
		wantErr  string
		isErr    error
		wantSets int
	}{
		{name: "unencodable", st: &fakeState{}, v: map[string]any{"f": func() {}}, wantErr: `encoding channel state "k2"`, wantSets: 0},
		{name: "store fails", st: &fakeState{setErr: storeErr}, v: record{}, wantErr: `saving channel state "k2"`, isErr: storeErr, wantSets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := SaveJSON(context.Background(), tt.st, "c", "a", "k2", tt.v)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.isErr != nil && !errors.Is(err, tt.isErr) {
				t.Fatalf("err = %v does not wrap %v", err, tt.isErr)
			}
			if tt.st.setCalls != tt.wantSets {
				t.Fatalf("SetChannelState called %d times, want %d", tt.st.setCalls, tt.wantSets)
			}
		})
	}
}
