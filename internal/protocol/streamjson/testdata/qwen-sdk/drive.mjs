// Drives a qwen-compatible CLI (the arbor binary, or the real qwen CLI when
// recording reference transcripts) through the real Qwen Code SDK
// (query() with pathToQwenExecutable), as a program built on that SDK
// would, for streamjson's qwen_sdk_e2e_test.go and qwen_golden_test.go.
//
// Usage: ARBOR_QWEN_E2E='{"cli":…,"cwd":…,"env":{…},…}' node drive.mjs
//   cli        the executable (arbor's binary, or the qwen CLI's cli.js)
//   cwd        the workspace it runs in
//   env        variables added to its environment (the SDK merges them
//              over this process's)
//   prompt     the first user message (default "Say hello")
//   options    merged into query()'s options
//   canUseTool "allow" or "deny": a callback that records each call and
//              answers so
//   interrupt  "go": call q.interrupt() once a line arrives on stdin (the
//              test writes one while the model request is in flight);
//              "early": right after the SDK wrote the prompt, before any
//              message arrived
//   controls   control methods to call, in order, once the first result
//              arrived (streaming input stays open until they are done)
//   stream     use streaming input even without controls or interrupt
//   mcp        add mcpServers: files, a stdio server (`node drive.mjs
//              stdio-server`, tool shout), and calc, an in-process one
//              (createSdkMcpServer, tool add, recorded as sdk_tool)
//
// Output (stdout), one JSON object per line: every message query() yields,
// unchanged (they have a "type"), and the driver's records, which have a
// "driver" key:
//   {"driver":"can_use_tool","tool_name":…,"input":…}
//   {"driver":"interrupted"}                 q.interrupt() resolved
//   {"driver":"control","method":…,"reply":…} or {…,"error":…}
//   {"driver":"session","session_id":…}      q.getSessionId()
//   {"driver":"done"} / {"driver":"error","message":…}
import { query, createSdkMcpServer, tool } from '@qwen-code/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

// `node drive.mjs stdio-server` serves the MCP tool shout(text) on stdio.
if (process.argv[2] === 'stdio-server') {
  const srv = new McpServer({ name: 'shouter', version: '2.0.0' });
  srv.tool('shout', 'Say the text in capitals.', { text: z.string() },
    async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() + '!' }] }));
  await srv.connect(new StdioServerTransport());
  await new Promise(() => {}); // until stdin closes
}

const c = JSON.parse(process.env.ARBOR_QWEN_E2E ?? 'null');
if (!c || !c.cli || !c.cwd) throw new Error('ARBOR_QWEN_E2E must hold cli and cwd');

function goAhead() {
  const rl = createInterface({ input: process.stdin });
  const line = new Promise((resolve, reject) => {
    rl.once('line', (l) => { resolve(l); rl.close(); });
    rl.once('close', () => reject(new Error('driver stdin closed before the go-ahead line')));
  });
  return { line, stop: () => { rl.close(); process.stdin.destroy(); } };
}

const controls = {
  supported_commands: (q) => q.supportedCommands(),
  mcp_server_status: (q) => q.mcpServerStatus(),
  get_context_usage: (q) => q.getContextUsage(),
  set_effort: (q) => q.setEffortStatus('high'),
  get_available_models: (q) => q.getAvailableModels(),
  get_usage_info: (q) => q.getUsageInfo(),
  set_permission_mode: (q) => q.setPermissionMode('auto-edit'),
  set_model: (q) => q.setModel(c.model ?? 'qwen-test'),
  continue_last_turn: (q) => q.continueLastTurn(),
};

async function main() {
  const opts = {
    pathToQwenExecutable: c.cli,
    cwd: c.cwd,
    env: c.env ?? {},
    stderr: (data) => process.stderr.write(data),
    ...(c.options ?? {}),
  };
  if (c.mcp) {
    const calc = createSdkMcpServer({
      name: 'calc',
      version: '1.0.0',
      tools: [tool('add', 'Add two numbers.', { a: z.number(), b: z.number() }, async (args) => {
        emit({ driver: 'sdk_tool', input: args });
        return { content: [{ type: 'text', text: `sum: ${args.a + args.b}` }] };
      })],
    });
    opts.mcpServers = {
      files: { command: process.execPath, args: [fileURLToPath(import.meta.url), 'stdio-server'] },
      calc,
    };
  }
  if (c.canUseTool) {
    opts.canUseTool = async (toolName, input) => {
      emit({ driver: 'can_use_tool', tool_name: toolName, input });
      if (c.canUseTool === 'allow') return { behavior: 'allow', updatedInput: input };
      return { behavior: 'deny', message: 'not this one' };
    };
  }
  const prompt = c.prompt ?? 'Say hello';
  const streaming = c.stream || c.interrupt || (c.controls ?? []).length > 0;
  if (!streaming) {
    const q = query({ prompt, options: opts });
    emit({ driver: 'session', session_id: q.getSessionId() });
    for await (const m of q) emit(m);
    return;
  }
  let endInput;
  const inputEnded = new Promise((resolve) => { endInput = resolve; });
  let firstResult, promptWritten;
  const gotResult = new Promise((resolve) => { firstResult = resolve; });
  const written = new Promise((resolve) => { promptWritten = resolve; });
  async function* input() {
    yield { type: 'user', session_id: '', message: { role: 'user', content: prompt }, parent_tool_use_id: null };
    // The SDK asks for the next message once it wrote this one.
    promptWritten();
    await inputEnded;
  }
  const q = query({ prompt: input(), options: opts });
  emit({ driver: 'session', session_id: q.getSessionId() });
  const iterating = (async () => {
    for await (const m of q) {
      emit(m);
      if (m.type === 'result') firstResult();
    }
  })();
  iterating.catch(() => {});
  try {
    if (c.interrupt === 'early') {
      await written;
      await q.interrupt();
      emit({ driver: 'interrupted' });
    } else if (c.interrupt === 'go') {
      const go = goAhead();
      const first = await Promise.race([iterating.then(() => 'ended', () => 'ended'), go.line.then(() => 'go', () => 'no-go')]);
      go.stop();
      if (first !== 'go') throw new Error(`the query ended before the interrupt (${first})`);
      await q.interrupt();
      emit({ driver: 'interrupted' });
    }
    await Promise.race([gotResult, iterating]);
    for (const method of c.controls ?? []) {
      try {
        emit({ driver: 'control', method, reply: (await controls[method](q)) ?? null });
      } catch (e) {
        emit({ driver: 'control', method, error: String(e?.message ?? e) });
      }
    }
  } finally {
    endInput();
  }
  await iterating;
}

main().then(
  () => { emit({ driver: 'done' }); process.exit(0); },
  (e) => { emit({ driver: 'error', message: String(e?.message ?? e) }); process.exit(1); },
);
