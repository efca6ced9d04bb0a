package providertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// ScriptedData returns the data of every SSE event the scripted server
// streams for turns, one POST of body to path for each turn; a [DONE]
// line is left out.
func ScriptedData(t *testing.T, path, body string, turns ...llmtest.Turn) [][]byte {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	var all [][]byte
	for range turns {
		res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
			if ok && !bytes.HasPrefix(data, []byte("[DONE]")) {
				all = append(all, bytes.Clone(data))
			}
		}
		res.Body.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// DecodesLikeTheSDK checks that every payload decodes into Ours what it
// decodes into the SDK's Theirs, as read reads that into Ours; neither
// may refuse one.
func DecodesLikeTheSDK[Ours, Theirs any](t *testing.T, payloads [][]byte, read func(Theirs) Ours) {
	t.Helper()
	for _, p := range payloads {
		var ours Ours
		errOurs := json.Unmarshal(p, &ours)
		var theirs Theirs
		errSDK := json.Unmarshal(p, &theirs)
		if errOurs != nil || errSDK != nil {
			t.Errorf("%s:\n arbor: %v\n SDK: %v", p, errOurs, errSDK)
			continue
		}
		if want := read(theirs); !reflect.DeepEqual(ours, want) {
			t.Errorf("%s:\n arbor: %+v\n SDK:   %+v", p, ours, want)
		}
	}
}

// Refusal is a payload arbor refuses to decode; SDKRefuses says whether
// the SDK does too (or coerces it into something).
type Refusal struct {
	Data       string
	SDKRefuses bool
}

// RefusesLikeTheSDK checks that Ours refuses every case and Theirs refuses
// those it is said to.
func RefusesLikeTheSDK[Ours, Theirs any](t *testing.T, cases []Refusal) {
	t.Helper()
	for _, c := range cases {
		var ours Ours
		var theirs Theirs
		errOurs, errSDK := json.Unmarshal([]byte(c.Data), &ours), json.Unmarshal([]byte(c.Data), &theirs)
		if errOurs == nil || (errSDK != nil) != c.SDKRefuses {
			t.Errorf("%s: arbor: %v, SDK: %v; want arbor to refuse, the SDK to refuse: %v", c.Data, errOurs, errSDK, c.SDKRefuses)
		}
	}
}

// BenchmarkStream is one model call of req over HTTP to a scripted server
// answering a short text: encoding, sending, the server's answer and
// decoding the stream. newProvider makes the provider for the server's
// root URL.
func BenchmarkStream(b *testing.B, newProvider func(baseURL string) llm.Provider, req *llm.Request) {
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "Reply, short and instant."} })
	b.Cleanup(srv.Close)
	p := newProvider(srv.URL)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Collect(p.Stream(context.Background(), req)); err != nil {
			b.Fatal(err)
		}
	}
}
