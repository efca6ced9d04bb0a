package protocol_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arbor-run/arbor/internal/protocol"
)

// A headless front end reads commands until stdin ends. Bad lines are
// reported and reading goes on; only the end of input or a broken stdin
// stops it.
func ExampleReader() {
	stdin := strings.NewReader(`{"type":"status"}` + "\n" +
		`{"type":"send","content":"` + strings.Repeat("x", 100) + `"}` + "\n" +
		"not json\r\n" +
		"\n" +
		`{"type":"send","content":"hi","client_extra":true}`)
	r := protocol.NewReader(stdin, 64)
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		var lerr *protocol.LineError
		switch {
		case errors.Is(err, protocol.ErrLineTooLong):
			fmt.Println("error stdin_line_too_long:", err)
			continue
		case errors.As(err, &lerr):
			fmt.Println("error:", lerr)
			continue
		case err != nil:
			fmt.Println("stdin failed:", err)
			return
		}
		switch line.Type {
		case "send":
			var cmd struct {
				Content string `json:"content"`
			}
			if err := line.Decode(&cmd); err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Printf("line %d: send %q\n", line.Number, cmd.Content)
		default:
			fmt.Printf("line %d: %s\n", line.Number, line.Type)
		}
	}
	// Output:
	// line 1: status
	// error stdin_line_too_long: line 2: input line too long: 128 bytes, limit 64
	// error: line 3: invalid JSON: invalid character 'o' in literal null (expecting 'u')
	// line 5: send "hi"
}

// Events from many goroutines go through one Writer; each becomes one line.
func ExampleWriter() {
	type event struct {
		Type string `json:"type"`
		Seq  int    `json:"seq"`
		Text string `json:"text"`
	}
	w := protocol.NewWriter(os.Stdout)
	_ = w.Write(event{Type: "assistant_message", Seq: 1, Text: "use <b> & </b>"})
	_ = w.WriteRaw([]byte(`{"type":"ready"}`))
	// Output:
	// {"type":"assistant_message","seq":1,"text":"use <b> & </b>"}
	// {"type":"ready"}
}
