package tool

import (
	"context"
	"fmt"
	"strings"
)

// Limits of ask_user.
const (
	askMaxOptions = 20
	// askMaxAnswerChars caps the answer handed to the model.
	askMaxAnswerChars = 30000
)

// Asker puts a question to whoever is in charge (a person at a terminal, a
// headless client). The agent's interaction broker implements it.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// Question is one question of the model.
type Question struct {
	CallID   string `json:"call_id"`
	Question string `json:"question"`
	// Header is a short label for the question ("Database", "Next
	// step"), shown above it; may be empty.
	Header  string   `json:"header,omitempty"`
	Options []string `json:"options,omitempty"`
	// OptionDetails explains the options, one entry per option in the
	// same order ("" where an option needs none); nil when none has one.
	OptionDetails []string `json:"option_details,omitempty"`
	MultiSelect   bool     `json:"multi_select,omitempty"`
	// Default is the answer taken when the person just presses Enter; ""
	// means an empty answer declines.
	Default string `json:"default,omitempty"`
	// AskNode is the tree node whose question this is (an ask node; its
	// answer becomes the node's result), 0 for an agent's ask_user call.
	AskNode int64 `json:"ask_node,omitempty"`
}

// Answer is the reply. Declined means the person chose not to answer.
type Answer struct {
	Text     string `json:"text"`
	Declined bool   `json:"declined,omitempty"`
}

type askUserArgs struct {
	Question           string   `json:"question" jsonschema_description:"The question, complete and self-contained."`
	Header             string   `json:"header,omitempty" jsonschema_description:"A short label for the question, a few words, shown above it."`
	Options            []string `json:"options,omitempty" jsonschema_description:"Choices to offer, if the answer is one of a few; the user may still answer freely."`
	OptionDescriptions []string `json:"option_descriptions,omitempty" jsonschema_description:"One short explanation per option, in the order of options (empty string for an option that needs none)."`
	MultiSelect        bool     `json:"multi_select,omitempty" jsonschema_description:"Allow choosing several options."`
}

const askUserDescription = `Ask the user a question and wait for the answer. Use it only when you cannot proceed without a decision or information only the user has.`

func newAskUser(asker Asker) Tool {
	return New("ask_user", askUserDescription, KindInteract, func(ctx context.Context, call Call, a askUserArgs) Result {
		return askUser(ctx, asker, call, a)
	})
}

func askUser(ctx context.Context, asker Asker, call Call, a askUserArgs) Result {
	if asker == nil {
		return Errorf("no one is available to answer questions")
	}
	switch {
	case strings.TrimSpace(a.Question) == "":
		return Errorf("question is empty")
	case len(a.Options) > askMaxOptions:
		return Errorf("%d options; at most %d are allowed", len(a.Options), askMaxOptions)
	case a.MultiSelect && len(a.Options) == 0:
		return Errorf("multi_select needs options")
	case len(a.OptionDescriptions) > len(a.Options):
		return Errorf("%d option_descriptions for %d options; give at most one per option", len(a.OptionDescriptions), len(a.Options))
	}
	for i, o := range a.Options {
		if strings.TrimSpace(o) == "" {
			return Errorf("option %d is empty", i+1)
		}
	}
	q := Question{CallID: call.ID, Question: a.Question, Header: strings.TrimSpace(a.Header), Options: a.Options, MultiSelect: a.MultiSelect}
	if len(a.OptionDescriptions) > 0 {
		q.OptionDetails = make([]string, len(a.Options))
		copy(q.OptionDetails, a.OptionDescriptions)
	}
	ans, err := asker.Ask(ctx, q)
	switch {
	case err != nil && ctx.Err() != nil:
		return Errorf("question cancelled before it was answered")
	case err != nil:
		return Errorf("could not ask the user: %v", err)
	case ans.Declined:
		return Result{Content: "the user declined to answer"}
	case strings.TrimSpace(ans.Text) == "":
		return Result{Content: "(the user gave an empty answer)"}
	}
	text, cut := cutRunes(ans.Text, askMaxAnswerChars)
	if cut {
		text += fmt.Sprintf("\n[… answer truncated at %d characters]", askMaxAnswerChars)
	}
	return Result{Content: text}
}
