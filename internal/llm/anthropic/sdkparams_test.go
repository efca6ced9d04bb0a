package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/arbor-run/arbor/internal/llm"
)

// sdkParams builds req as the SDK's params: the reference requestBody is
// checked against (TestBodyMatchesTheSDK), and what Stream sent before it
// encoded bodies itself. defaultMax applies when req sets no output cap.
func sdkParams(req *llm.Request, defaultMax int64) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMax
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: maxTokens,
	}
	if req.ThinkingBudget > 0 {
		// The API requires the budget to be below max_tokens and counts
		// thinking against it, so the cap leaves room for the answer.
		if params.MaxTokens <= req.ThinkingBudget {
			params.MaxTokens = req.ThinkingBudget + defaultMax
		}
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(req.ThinkingBudget)
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, spec := range req.Tools {
		tool, err := sdkTool(spec)
		if err != nil {
			return params, err
		}
		params.Tools = append(params.Tools, tool)
	}
	for i, m := range req.Messages {
		msg, err := sdkMessage(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		if len(sdkContent(msg)) > 0 {
			params.Messages = append(params.Messages, msg)
		}
	}
	sdkCacheBreakpoints(&params)
	return params, nil
}

func sdkTool(spec llm.ToolSpec) (sdk.ToolUnionParam, error) {
	if spec.Name == "" {
		return sdk.ToolUnionParam{}, errEmptyToolName
	}
	schema := spec.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	if !json.Valid(schema) {
		return sdk.ToolUnionParam{}, fmt.Errorf("tool %q: input schema is not valid JSON", spec.Name)
	}
	tool := sdk.ToolParam{
		Name: spec.Name,
		// The schema is derived from the tool's Go struct and sent verbatim.
		InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
	}
	if spec.Description != "" {
		tool.Description = sdk.String(spec.Description)
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}

func sdkMessage(m llm.Message) (sdk.MessageParam, error) {
	var blocks []sdk.ContentBlockParamUnion
	for _, part := range m.Parts {
		block, ok, err := sdkBlock(part)
		if err != nil {
			return sdk.MessageParam{}, err
		}
		if ok {
			blocks = append(blocks, block)
		}
	}
	switch m.Role {
	case llm.RoleUser:
		return sdk.NewUserMessage(blocks...), nil
	case llm.RoleAssistant:
		return sdk.NewAssistantMessage(blocks...), nil
	default:
		return sdk.MessageParam{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// sdkBlock translates one part; ok is false for parts the API would
// reject and that carry nothing (empty text).
func sdkBlock(part llm.Part) (block sdk.ContentBlockParamUnion, ok bool, err error) {
	switch part.Type {
	case llm.PartText:
		if part.Text == "" {
			return block, false, nil
		}
		return sdk.NewTextBlock(part.Text), true, nil
	case llm.PartImage:
		return sdk.NewImageBlockBase64(part.Image.MediaType, part.Image.Data), true, nil
	case llm.PartThinking:
		switch {
		case part.Text == "" && part.Signature != "":
			return sdk.NewRedactedThinkingBlock(part.Signature), true, nil
		case part.Text == "":
			return block, false, nil
		}
		return sdk.NewThinkingBlock(part.Signature, part.Text), true, nil
	case llm.PartToolCall:
		call := part.ToolCall
		if call == nil {
			return block, false, errors.New("tool_call part without a call")
		}
		if call.Name == "" {
			return block, false, fmt.Errorf("tool call %q: %w", call.ID, errEmptyToolName)
		}
		input := call.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if !json.Valid(input) {
			return block, false, fmt.Errorf("tool call %q: input is not valid JSON", call.ID)
		}
		return sdk.NewToolUseBlock(call.ID, input, call.Name), true, nil
	case llm.PartToolResult:
		res := part.ToolResult
		if res == nil {
			return block, false, errors.New("tool_result part without a result")
		}
		tr := sdk.ToolResultBlockParam{ToolUseID: res.CallID}
		if res.IsError {
			tr.IsError = sdk.Bool(true)
		}
		// An empty text block is rejected by the API; an empty result is not.
		if res.Content != "" {
			tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: res.Content}}}
		}
		for _, img := range res.Images {
			tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: sdk.NewImageBlockBase64(img.MediaType, img.Data).OfImage})
		}
		return sdk.ContentBlockParamUnion{OfToolResult: &tr}, true, nil
	default:
		return block, false, fmt.Errorf("unknown part type %q", part.Type)
	}
}

// sdkCacheBreakpoints marks the stable prefix (tools and system prompt) and
// the end of the conversation for prompt caching. Thinking blocks cannot
// carry a breakpoint, so the last block that can is used.
func sdkCacheBreakpoints(params *sdk.MessageNewParams) {
	switch {
	case len(params.System) > 0:
		params.System[len(params.System)-1].CacheControl = sdk.NewCacheControlEphemeralParam()
	case len(params.Tools) > 0:
		if cc := params.Tools[len(params.Tools)-1].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
		}
	}
	if len(params.Messages) == 0 {
		return
	}
	blocks := sdkContent(params.Messages[len(params.Messages)-1])
	for i := len(blocks) - 1; i >= 0; i-- {
		if cc := blocks[i].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
			return
		}
	}
}

// sdkContent returns the blocks of a user or assistant message.
func sdkContent(m sdk.MessageParam) []sdk.ContentBlockParamUnion {
	switch {
	case m.OfUser != nil:
		return m.OfUser.Content
	case m.OfAssistant != nil:
		return m.OfAssistant.Content
	}
	return nil
}
