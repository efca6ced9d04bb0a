// MCP servers through the real Claude Agent SDK, for streamjson's
// sdk_mcp_e2e_test.go: query() with mcpServers holding one stdio server and
// one in-process server (createSdkMcpServer), whose JSON-RPC travels over
// the control channel (mcp_message).
//
// Usage:
//   ARBOR_SDK_E2E='{"cli":…,"cwd":…,"env":{…},"options":{…}}' node mcp.mjs
//     Runs one streamed user message ("Use both tools.") with
//       mcpServers: {files: stdio `node mcp.mjs stdio-server`,
//                    calc: createSdkMcpServer with the tool add(a, b)},
//     a canUseTool callback that records each call and allows it, and
//     c.options merged into query()'s options. After the result, it asks
//     q.mcpServerStatus(), then ends the input. With c.noManifests the
//     SDK sends no manifests of its in-process servers in initialize
//     (CLAUDE_AGENT_SDK_DISABLE_MCP_MANIFESTS), so the CLI handshakes with
//     them over mcp_message.
//   node mcp.mjs stdio-server
//     Serves the MCP tool shout(text) over stdio: it answers the text in
//     capitals.
//
// Output (stdout), one JSON object per line: every message query()
// yields, unchanged, and the driver's own records, which have a "driver"
// key:
//   {"driver":"can_use_tool","tool_name":…,"input":…,"tool_use_id":…}
//   {"driver":"sdk_tool","input":…}       the in-process add ran
//   {"driver":"mcp_status","servers":[…]} what q.mcpServerStatus() resolved to
//   {"driver":"done"} / {"driver":"error","message":…}
import { createSdkMcpServer, query, tool } from '@anthropic-ai/claude-agent-sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

async function stdioServer() {
  const srv = new McpServer({ name: 'shouter', version: '2.0.0' });
  srv.tool('shout', 'Say the text in capitals.', { text: z.string() },
    async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() + '!' }] }));
  await srv.connect(new StdioServerTransport());
}

async function drive() {
  const raw = process.env.ARBOR_SDK_E2E;
  if (!raw) throw new Error('ARBOR_SDK_E2E is not set');
  const c = JSON.parse(raw);
  for (const k of ['cli', 'cwd', 'env']) {
    if (!c[k]) throw new Error(`ARBOR_SDK_E2E has no "${k}"`);
  }
  if (c.noManifests) process.env.CLAUDE_AGENT_SDK_DISABLE_MCP_MANIFESTS = '1';
  const calc = createSdkMcpServer({
    name: 'calc',
    version: '1.0.0',
    tools: [tool('add', 'Add two numbers.', { a: z.number(), b: z.number() }, async (args) => {
      emit({ driver: 'sdk_tool', input: args });
      return { content: [{ type: 'text', text: `sum: ${args.a + args.b}` }] };
    })],
  });

  let endInput;
  const inputEnded = new Promise((resolve) => { endInput = resolve; });
  async function* input() {
    yield { type: 'user', message: { role: 'user', content: 'Use both tools.' }, parent_tool_use_id: null, session_id: '' };
    await inputEnded;
  }
  const q = query({
    prompt: input(),
    options: {
      pathToClaudeCodeExecutable: c.cli,
      cwd: c.cwd,
      env: c.env,
      stderr: (data) => process.stderr.write(data),
      permissionMode: 'default',
      mcpServers: {
        files: { type: 'stdio', command: process.execPath, args: [fileURLToPath(import.meta.url), 'stdio-server'] },
        calc,
      },
      canUseTool: async (toolName, toolInput, o) => {
        emit({ driver: 'can_use_tool', tool_name: toolName, input: toolInput, tool_use_id: o.toolUseID });
        return { behavior: 'allow', updatedInput: toolInput };
      },
      ...(c.options ?? {}),
    },
  });
  try {
    for await (const m of q) {
      emit(m);
      if (m.type === 'result') {
        emit({ driver: 'mcp_status', servers: await q.mcpServerStatus() });
        endInput();
      }
    }
  } finally {
    endInput();
  }
}

if (process.argv[2] === 'stdio-server') {
  await stdioServer();
} else {
  try {
    await drive();
    emit({ driver: 'done' });
  } catch (e) {
    emit({ driver: 'error', message: String(e?.message ?? e) });
    process.exitCode = 1;
  }
}
