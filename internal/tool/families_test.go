package tool

import (
	"strings"
	"testing"
)

// TestFamilyNames: calls by Chord's and Codex's tool names and argument
// shapes run arbor's tools.
func TestFamilyNames(t *testing.T) {
	t.Parallel()
	f := setupTools(t)
	f.write("a.txt", "one\ntwo\nthree\n")
	reqContains(t, reqOK(t, f.callRaw("read", `{"path":"a.txt","offset":1,"limit":1}`)), "2\ttwo")
	reqOK(t, f.callRaw("write", `{"path":"b.txt","content":"bee"}`))
	reqEqual(t, f.read("b.txt"), "bee")
	reqOK(t, f.callRaw("patch", `{"patch":"*** Begin Patch\n*** Add File: c.txt\n+sea\n*** End Patch"}`))
	reqEqual(t, f.read("c.txt"), "sea\n")
	reqContains(t, reqOK(t, f.callRaw("list_dir", `{"path":"."}`)), "b.txt")
	reqContains(t, reqOK(t, f.callRaw("local_shell", `{"command":["bash","-lc","echo $((6*7))"]}`)), "42")
	reqContains(t, reqOK(t, f.callRaw("container.exec", `{"command":["ls","-1"],"workdir":".","timeout_ms":5000}`)), "a.txt")
	f.asker.answer = Answer{Text: "yes"}
	reqContains(t, reqOK(t, f.callRaw("question", `{"question":"Go on?","header":"Go","options":[{"label":"yes","description":"do it"},{"label":"no","description":"stop"}],"multiple":false}`)), "yes")
	if q := f.asker.asked[len(f.asker.asked)-1]; strings.Join(q.Options, ",") != "yes,no" || strings.Join(q.OptionDetails, ",") != "do it,stop" {
		t.Fatalf("the question asked: %+v", q)
	}
	if got := shellJoin([]string{"echo", "it's", "a b"}); got != `echo 'it'\''s' 'a b'` {
		t.Fatalf("shellJoin = %s", got)
	}
}
