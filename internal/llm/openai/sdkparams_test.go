package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/arbor-run/arbor/internal/llm"
)

// sdkParams builds req as the SDK's params: the reference requestBody is
// checked against (TestBodyMatchesTheSDK), and what Stream sent before it
// encoded bodies itself. defaultMax applies when req sets no output cap;
// official says the cap goes in max_completion_tokens (api.openai.com).
func sdkParams(req *llm.Request, defaultMax int64, official bool) (sdk.ChatCompletionNewParams, error) {
	params := sdk.ChatCompletionNewParams{
		Model: shared.ChatModel(req.Model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{
			IncludeUsage: sdk.Bool(true),
		},
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMax
	}
	if official {
		params.MaxCompletionTokens = sdk.Int(maxTokens)
	} else {
		params.MaxTokens = sdk.Int(maxTokens)
	}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msgs, err := sdkMessages(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msgs...)
	}
	for _, spec := range req.Tools {
		tool, err := sdkTool(spec)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tool)
	}
	return params, nil
}

func sdkTool(spec llm.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	if spec.Name == "" {
		return sdk.ChatCompletionToolUnionParam{}, errEmptyToolName
	}
	schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if len(spec.InputSchema) > 0 {
		schema = shared.FunctionParameters{}
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
			return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: input schema: %w", spec.Name, err)
		}
	}
	fn := shared.FunctionDefinitionParam{Name: spec.Name, Parameters: schema}
	if spec.Description != "" {
		fn.Description = sdk.String(spec.Description)
	}
	return sdk.ChatCompletionFunctionTool(fn), nil
}

// sdkMessages translates one message. A user message becomes its tool
// results as "tool" messages (which must directly follow the assistant's
// tool calls) and then its text, if any.
func sdkMessages(m llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleUser:
		return sdkUser(m)
	case llm.RoleAssistant:
		msg, ok, err := sdkAssistant(m)
		if err != nil || !ok {
			return nil, err
		}
		return []sdk.ChatCompletionMessageParamUnion{msg}, nil
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
}

func sdkUser(m llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	var texts []string
	// Tool messages hold only text: images of tool results follow them
	// in a user message.
	var images, sent []sdk.ChatCompletionContentPartUnionParam
	for _, part := range m.Parts {
		switch part.Type {
		case llm.PartText:
			if part.Text != "" {
				texts = append(texts, part.Text)
			}
		case llm.PartImage:
			sent = append(sent, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:" + part.Image.MediaType + ";base64," + part.Image.Data}))
		case llm.PartToolResult:
			res := part.ToolResult
			if res == nil {
				return nil, errors.New("tool_result part without a result")
			}
			out = append(out, sdk.ToolMessage(toolResultText(*res), res.CallID))
			for i, img := range res.Images {
				if i == 0 {
					images = append(images, sdk.TextContentPart(fmt.Sprintf("Images returned by tool call %s:", res.CallID)))
				}
				images = append(images, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: "data:" + img.MediaType + ";base64," + img.Data}))
			}
		case llm.PartThinking, llm.PartToolCall:
			return nil, fmt.Errorf("a user message cannot hold a %s part", part.Type)
		default:
			return nil, fmt.Errorf("unknown part type %q", part.Type)
		}
	}
	images = append(images, sent...)
	switch {
	case len(images) > 0 && len(texts) > 0:
		out = append(out, sdk.UserMessage(append(images, sdk.TextContentPart(strings.Join(texts, "\n\n")))))
	case len(images) > 0:
		out = append(out, sdk.UserMessage(images))
	case len(texts) > 0:
		out = append(out, sdk.UserMessage(strings.Join(texts, "\n\n")))
	}
	return out, nil
}

// sdkAssistant translates an assistant message; ok is false when nothing
// is left to send (a message of thinking only).
func sdkAssistant(m llm.Message) (msg sdk.ChatCompletionMessageParamUnion, ok bool, err error) {
	var asst sdk.ChatCompletionAssistantMessageParam
	var texts []string
	for _, part := range m.Parts {
		switch part.Type {
		case llm.PartText:
			if part.Text != "" {
				texts = append(texts, part.Text)
			}
		case llm.PartThinking:
			// Not sent back; see the package doc.
		case llm.PartToolCall:
			call := part.ToolCall
			if call == nil {
				return msg, false, errors.New("tool_call part without a call")
			}
			if call.Name == "" {
				return msg, false, fmt.Errorf("tool call %q: %w", call.ID, errEmptyToolName)
			}
			args := strings.TrimSpace(string(call.Input))
			if args == "" || args == "null" {
				args = "{}"
			}
			asst.ToolCalls = append(asst.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       call.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: call.Name, Arguments: args},
				},
			})
		case llm.PartToolResult:
			return msg, false, errors.New("an assistant message cannot hold a tool_result part")
		default:
			return msg, false, fmt.Errorf("unknown part type %q", part.Type)
		}
	}
	if len(texts) > 0 {
		asst.Content.OfString = sdk.String(strings.Join(texts, "\n\n"))
	}
	if len(texts) == 0 && len(asst.ToolCalls) == 0 {
		return msg, false, nil
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &asst}, true, nil
}
