package permission

import (
	"slices"
	"testing"
)

func TestParseCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		segments []string
		nested   []string
		subst    bool
		bad      bool
	}{
		{name: "simple", in: "git status", segments: []string{"git status"}},
		{name: "whitespace collapsed", in: "  git \t status  ", segments: []string{"git status"}},
		{name: "and", in: "git status && rm -rf /", segments: []string{"git status", "rm -rf /"}},
		{name: "or", in: "a || b", segments: []string{"a", "b"}},
		{name: "pipe", in: "git status | grep x", segments: []string{"git status", "grep x"}},
		{name: "pipe stderr", in: "make |& tee log", segments: []string{"make", "tee log"}},
		{name: "semicolon and newline", in: "a; b\nc", segments: []string{"a", "b", "c"}},
		{name: "background", in: "server & client", segments: []string{"server", "client"}},
		{name: "trailing operators dropped", in: "a;;  &", segments: []string{"a"}},
		{name: "double quotes keep operators", in: `git commit -m "a; b && c | d"`, segments: []string{`git commit -m "a; b && c | d"`}},
		{name: "single quotes keep operators", in: `echo 'x; y' | wc`, segments: []string{`echo 'x; y'`, "wc"}},
		{name: "quoted spaces kept", in: `echo "a   b"`, segments: []string{`echo "a   b"`}},
		{name: "escaped operator", in: `find . -exec rm {} \; ; ls`, segments: []string{`find . -exec rm {} \;`, "ls"}},
		{name: "line continuation", in: "go test \\\n ./...", segments: []string{"go test ./..."}},
		{name: "redirections stay", in: "go test ./... 2>&1 > out.txt", segments: []string{"go test ./... 2>&1 > out.txt"}},
		{name: "redirect both", in: "make &> log; ls", segments: []string{"make &> log", "ls"}},
		{name: "dollar paren", in: "echo $(whoami)", segments: []string{"echo $(whoami)"}, nested: []string{"whoami"}, subst: true},
		{name: "dollar paren in double quotes", in: `echo "$(rm -rf / ; id)"`, segments: []string{`echo "$(rm -rf / ; id)"`}, nested: []string{"rm -rf /", "id"}, subst: true},
		{name: "dollar paren in single quotes", in: `echo '$(whoami)'`, segments: []string{`echo '$(whoami)'`}},
		{name: "backticks", in: "echo `whoami`", segments: []string{"echo `whoami`"}, nested: []string{"whoami"}, subst: true},
		{name: "nested substitution", in: "echo $(cat $(ls) | wc)", segments: []string{"echo $(cat $(ls) | wc)"}, nested: []string{"ls", "cat $(ls)", "wc"}, subst: true},
		{name: "process substitution", in: "diff <(ls a) >(tee b)", segments: []string{"diff <(ls a) >(tee b)"}, nested: []string{"ls a", "tee b"}, subst: true},
		{name: "arithmetic counts as substitution", in: "echo $((1+2))", segments: []string{"echo $((1+2))"}, nested: []string{"(1+2)"}, subst: true},
		{name: "ansi c quote with escaped quote", in: `echo $'\'' ; rm -rf /`, segments: []string{`echo $'\''`, "rm -rf /"}},
		{name: "unterminated quote", in: `echo "a; rm x`, segments: []string{`echo "a; rm x`}, bad: true},
		{name: "unterminated substitution", in: `echo $(rm x`, segments: []string{`echo $(rm x`}, nested: []string{"rm x"}, subst: true, bad: true},
		{name: "subshell parens", in: "(cd a && make)", segments: []string{"(cd a", "make)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseCommand(tt.in)
			if !slices.Equal(got.segments, tt.segments) {
				t.Fatalf("segments = %q, want %q", got.segments, tt.segments)
			}
			if !slices.Equal(got.nested, tt.nested) {
				t.Fatalf("nested = %q, want %q", got.nested, tt.nested)
			}
			if got.substitution != tt.subst || got.malformed != tt.bad {
				t.Fatalf("substitution, malformed = %v, %v; want %v, %v", got.substitution, got.malformed, tt.subst, tt.bad)
			}
		})
	}
}

func TestDenyForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
	}{
		{"(rm -rf /)", "rm -rf /"},
		{"sudo rm -rf /", "rm -rf /"},
		{"FOO=1 BAR=2 rm x", "rm x"},
		{"if true; then rm x; fi", "rm x"},
		{"echo $(sudo rm y)", "rm y"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			forms := parseCommand(tt.in).denyForms()
			if !slices.Contains(forms, tt.want) {
				t.Fatalf("deny forms %q lack %q", forms, tt.want)
			}
		})
	}
}
