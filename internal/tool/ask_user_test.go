package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestAskUser(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsAnswerAndPassesQuestion", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.asker.answer = Answer{Text: "use PostgreSQL"}
		got := reqOK(t, f.call("ask_user", askUserArgs{Question: "Which database?", Options: []string{"SQLite", "PostgreSQL"}}))
		reqEqual(t, got, "use PostgreSQL")
		reqEqual(t, len(f.asker.asked), 1)
		q := f.asker.asked[0]
		reqEqual(t, q.CallID, "call_1")
		reqEqual(t, q.Question, "Which database?")
		reqEqual(t, strings.Join(q.Options, "|"), "SQLite|PostgreSQL")
		reqEqual(t, q.MultiSelect, false)
		reqEqual(t, q.Header, "")
		reqEqual(t, len(q.OptionDetails), 0)
	})

	t.Run("HeaderAndOptionDescriptions", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.asker.answer = Answer{Text: "SQLite"}
		reqOK(t, f.call("ask_user", askUserArgs{Question: "Which database?", Header: " Database ",
			Options: []string{"SQLite", "PostgreSQL", "MySQL"}, OptionDescriptions: []string{"embedded", "a server"}}))
		q := f.asker.asked[0]
		reqEqual(t, q.Header, "Database")
		// One detail per option, "" for the options the model left out.
		reqEqual(t, strings.Join(q.OptionDetails, "|"), "embedded|a server|")
	})

	t.Run("Declined", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.asker.answer = Answer{Declined: true}
		reqEqual(t, reqOK(t, f.call("ask_user", askUserArgs{Question: "Why?"})), "the user declined to answer")
	})

	t.Run("EmptyAndLongAnswers", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqEqual(t, reqOK(t, f.call("ask_user", askUserArgs{Question: "Anything?"})), "(the user gave an empty answer)")
		f.asker.answer = Answer{Text: strings.Repeat("a", askMaxAnswerChars+10)}
		got := reqOK(t, f.call("ask_user", askUserArgs{Question: "Essay?"}))
		reqEqual(t, got, strings.Repeat("a", askMaxAnswerChars)+"\n[… answer truncated at 30000 characters]")
	})

	t.Run("NoAsker", func(t *testing.T) {
		t.Parallel()
		tl := newAskUser(nil)
		raw, _ := json.Marshal(askUserArgs{Question: "Hello?"})
		reqEqual(t, reqErr(t, tl.Run(context.Background(), Call{Input: raw})), "no one is available to answer questions")
	})

	t.Run("AskerFailsOrIsCancelled", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.asker.err = errors.New("broker closed")
		reqEqual(t, reqErr(t, f.call("ask_user", askUserArgs{Question: "Q?"})), "could not ask the user: broker closed")

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f.asker.err = context.Canceled
		raw, _ := json.Marshal(askUserArgs{Question: "Q?"})
		tl, _ := f.reg.Lookup("ask_user")
		reqEqual(t, reqErr(t, tl.Run(ctx, Call{Input: raw})), "question cancelled before it was answered")
	})

	t.Run("InvalidQuestions", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		cases := []struct {
			args askUserArgs
			want string
		}{
			{askUserArgs{Question: " "}, "question is empty"},
			{askUserArgs{Question: "Q?", MultiSelect: true}, "multi_select needs options"},
			{askUserArgs{Question: "Q?", Options: []string{"a", ""}}, "option 2 is empty"},
			{askUserArgs{Question: "Q?", Options: make([]string, askMaxOptions+1)}, "21 options; at most 20"},
			{askUserArgs{Question: "Q?", Options: []string{"a"}, OptionDescriptions: []string{"x", "y"}}, "2 option_descriptions for 1 options"},
		}
		for _, tc := range cases {
			reqContains(t, reqErr(t, f.call("ask_user", tc.args)), tc.want)
		}
		reqEqual(t, len(f.asker.asked), 0)
	})
}
