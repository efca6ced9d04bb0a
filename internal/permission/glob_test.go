package permission

import "testing"

func TestCommandGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, cmd string
		want         bool
	}{
		{"git *", "git push origin main", true},
		{"git *", "git", true},
		{"git *", "gitk", false},
		{"git *", "echo git x", false},
		{"git status*", "git status --short", true},
		{"git status*", "git statusx", true},
		{"git status:*", "git status -s", true},
		{"git status:*", "git status", true},
		{"git status:*", "git statusx", false},
		{"*", "anything at all", true},
		{"go test ./...", "go test ./...", true},
		{"go test ./...", "go test ./x/...", false},
		{"ls  -la", "ls -la", true},
		{"cat *.go", "cat a/b/c.go", true},
		{"rm -rf *", "rm -rf /", true},
		{"a.b", "aXb", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.cmd, func(t *testing.T) {
			t.Parallel()
			re, err := commandGlob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := re.MatchString(tt.cmd); got != tt.want {
				t.Fatalf("%q ~ %q = %v, want %v", tt.pattern, tt.cmd, got, tt.want)
			}
		})
	}
}

func TestPathGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/w/src/*", "/w/src/a.go", true},
		{"/w/src/*", "/w/src/x/a.go", false},
		{"/w/src/**", "/w/src/x/y/a.go", true},
		{"/w/src/**", "/w/src", true},
		{"/w/src/**", "/w/srcx/a", false},
		{"/w/**/*.go", "/w/a.go", true},
		{"/w/**/*.go", "/w/x/y/a.go", true},
		{"/w/**/*.go", "/w/x/a.txt", false},
		{"/w/a?c", "/w/abc", true},
		{"/w/a?c", "/w/a/c", false},
		{`/w/a\*`, "/w/a*", true},
		{`/w/a\*`, "/w/ab", false},
		{"/w/a.b", "/w/aXb", false},
		{"/**", "/etc/passwd", true},
		{"/w/x**", "/w/xy/z", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.path, func(t *testing.T) {
			t.Parallel()
			re, err := pathGlob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := re.MatchString(tt.path); got != tt.want {
				t.Fatalf("%q ~ %q = %v, want %v (regexp %s)", tt.pattern, tt.path, got, tt.want, re)
			}
		})
	}
}
