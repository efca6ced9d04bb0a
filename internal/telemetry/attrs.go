package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/arbor-run/arbor/internal/llm"
)

// arbor's own attributes, beside the GenAI conventions' (semconv).
const (
	keyRunID      = attribute.Key("arbor.run.id")
	keyRunState   = attribute.Key("arbor.run.state")
	keyNodeID     = attribute.Key("arbor.node.id")
	keyNodeKind   = attribute.Key("arbor.node.kind")
	keyNodeState  = attribute.Key("arbor.node.state")
	keyNodeGoal   = attribute.Key("arbor.node.goal") // content: captured only when asked
	keyCost       = attribute.Key("arbor.cost_usd")
	keyCostKnown  = attribute.Key("arbor.cost_known")
	keyStep       = attribute.Key("arbor.step")
	keyResponseID = semconv.GenAIResponseIDKey
	keyCacheWrite = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	keyAttempt    = attribute.Key("arbor.retry.attempt")
	keyDelay      = attribute.Key("arbor.retry.delay_ms")
	keyBlocked    = attribute.Key("arbor.sandbox.blocked")
	keyResolution = attribute.Key("arbor.interaction.resolution")
	keyKind       = attribute.Key("arbor.interaction.kind")
	keyToolArgs   = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult = attribute.Key("gen_ai.tool.call.result")
	keyOutput     = attribute.Key("gen_ai.output.messages")
	keyTurnOf     = attribute.Key("arbor.session.turn")
)

// agentName is gen_ai.agent.name: "arbor" for a conversation's agent, the
// node kind for a tree node ("goal", "task", "ask", "host").
const agentName = "arbor"

// finishReason maps a stop reason to the conventions' finish reasons.
func finishReason(r llm.StopReason) string {
	switch r {
	case llm.StopEndTurn, llm.StopSequence:
		return "stop"
	case llm.StopToolUse:
		return "tool_call"
	case llm.StopMaxTokens:
		return "length"
	case llm.StopRefusal:
		return "content_filter"
	case "":
		return "error"
	}
	return string(r)
}

// usageAttrs are a model call's token counts.
func usageAttrs(u llm.Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(u.OutputTokens)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheReadTokens)),
		keyCacheWrite.Int64(u.CacheWriteTokens),
	}
}
