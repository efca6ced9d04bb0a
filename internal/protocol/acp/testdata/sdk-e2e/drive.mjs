// Drives `arbor acp` through the official ACP TypeScript SDK's client side
// (@agentclientprotocol/sdk, pinned in package.json): client(), onRequest /
// onNotification, connectWith(ndJsonStream(...)). The Go test passes the
// arbor binary, its argv, cwd and environment in ARBOR_ACP_E2E and the
// scenario as argv[2]; every record printed is one JSON line:
//   {driver: "update", update}            a session/update
//   {driver: "permission", params}        a session/request_permission
//   {driver: "read"|"write", path, ...}   fs/read_text_file, fs/write_text_file
//   {driver: "terminal"|"release", ...}   terminal/create, terminal/release
//   {driver: "session", sessionId}        session/new's answer
//   {driver: "loaded"|"resumed", result}  session/load's, session/resume's answer
//   {driver: "listed"|"listed_all", result}  a session/list answer
//   {driver: "closed", result}            a session/close's answer (cfg.close)
//   {driver: "stop", stopReason}          a prompt's answer
//   {driver: "rpc_error", what, code, message}
//   {driver: "alive", pid, alive}         after a cancelled prompt
//   {driver: "exit", code, signal}        arbor's exit
//   {driver: "done"} or {driver: "error", message}
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const cfg = JSON.parse(process.env.ARBOR_ACP_E2E);
const scenario = process.argv[2];
const rec = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// cfg.env is a list of NAME=VALUE, as Go's exec takes it.
const env = Object.fromEntries(cfg.env.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
const child = spawn(cfg.cli, ["acp", ...(cfg.args ?? [])], { cwd: cfg.cwd, env, stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((res) => child.on("exit", (code, signal) => res({ code, signal })));
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

// waiters are resolved by the updates they wait for.
const updates = [];
let waiters = [];
function waitUpdate(pred) {
  const seen = updates.find(pred);
  if (seen) return Promise.resolve(seen);
  return new Promise((resolve) => waiters.push({ pred, resolve }));
}

const terminals = new Map();

const app = client({ name: "arbor-acp-e2e" })
  .onNotification(methods.client.session.update, ({ params }) => {
    rec({ driver: "update", sessionId: params.sessionId, update: params.update });
    updates.push(params.update);
    waiters = waiters.filter((w) => (w.pred(params.update) ? (w.resolve(params.update), false) : true));
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    rec({ driver: "permission", params });
    if (scenario === "hang") {
      // Never answer; the client goes away instead.
      child.stdin.end();
      return new Promise(() => {});
    }
    return { outcome: { outcome: "selected", optionId: cfg.option ?? "allow" } };
  })
  .onRequest(methods.client.fs.readTextFile, ({ params }) => {
    // An editor answers from its buffer, unsaved changes included.
    const buffered = cfg.buffers?.[params.path];
    rec({ driver: "read", path: params.path, buffered: buffered !== undefined });
    return { content: buffered ?? fs.readFileSync(params.path, "utf8") };
  })
  // terminal/*: an editor's terminals, here child processes.
  .onRequest(methods.client.terminal.create, ({ params }) => {
    const id = `term-${terminals.size + 1}`;
    const p = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? cfg.cwd, env });
    const t = { output: "", exit: null, proc: p };
    p.stdout.on("data", (d) => (t.output += d));
    p.stderr.on("data", (d) => (t.output += d));
    t.done = new Promise((res) => p.on("close", (code, signal) => res((t.exit = { exitCode: code, signal }))));
    terminals.set(id, t);
    rec({ driver: "terminal", terminalId: id, command: params.command, args: params.args, cwd: params.cwd });
    return { terminalId: id };
  })
  .onRequest(methods.client.terminal.output, ({ params }) => {
    const t = terminals.get(params.terminalId);
    return { output: t.output, truncated: false, exitStatus: t.exit };
  })
  .onRequest(methods.client.terminal.waitForExit, async ({ params }) => await terminals.get(params.terminalId).done)
  .onRequest(methods.client.terminal.kill, ({ params }) => {
    terminals.get(params.terminalId).proc.kill("SIGKILL");
    return {};
  })
  .onRequest(methods.client.terminal.release, async ({ params }) => {
    const t = terminals.get(params.terminalId);
    if (t.exit === null) t.proc.kill("SIGKILL");
    await t.done; // the process is gone (and reaped) when release returns
    rec({ driver: "release", terminalId: params.terminalId, exit: t.exit });
    return {};
  })
  .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
    rec({ driver: "write", path: params.path, content: params.content });
    fs.mkdirSync(path.dirname(params.path), { recursive: true });
    fs.writeFileSync(params.path, params.content);
    return {};
  });

const text = (t) => [{ type: "text", text: t }];

async function rpcError(what, p) {
  try {
    await p;
    rec({ driver: "rpc_error", what, code: null, message: "no error" });
  } catch (e) {
    rec({ driver: "rpc_error", what, code: e.code ?? null, message: String(e.message ?? e) });
  }
}

async function run(ctx) {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: !!cfg.fs, writeTextFile: !!cfg.fs }, terminal: !!cfg.terminal },
  });
  rec({ driver: "initialized", result: init });
  if (scenario === "errors") {
    await rpcError("unknown session", ctx.request(methods.agent.session.prompt, { sessionId: "no-such-session", prompt: text("hi") }));
    await rpcError("unknown method", ctx.request("arbor/no_such_method", {}));
    await rpcError("load unknown", ctx.request(methods.agent.session.load, { sessionId: "no-such-session", cwd: cfg.cwd, mcpServers: [] }));
    return;
  }
  if (scenario === "list") {
    // Every page of session/list for cfg.cwd, following nextCursor; then
    // one of every workspace's, and a cursor arbor never gave.
    let cursor;
    do {
      const r = await ctx.request(methods.agent.session.list, { cwd: cfg.cwd, ...(cursor ? { cursor } : {}) });
      rec({ driver: "listed", result: r });
      cursor = r.nextCursor;
    } while (cursor);
    rec({ driver: "listed_all", result: await ctx.request(methods.agent.session.list, {}) });
    await rpcError("bad cursor", ctx.request(methods.agent.session.list, { cwd: cfg.cwd, cursor: "not-a-cursor" }));
    return;
  }
  let sessionId = cfg.sessionId;
  if (scenario === "load") {
    const r = await ctx.request(methods.agent.session.load, { sessionId, cwd: cfg.cwd, mcpServers: [] });
    rec({ driver: "loaded", result: r });
  } else if (scenario === "resume") {
    const r = await ctx.request(methods.agent.session.resume, { sessionId, cwd: cfg.cwd, mcpServers: [] });
    rec({ driver: "resumed", result: r });
  } else {
    const r = await ctx.request(methods.agent.session.new, { cwd: cfg.cwd, mcpServers: cfg.mcpServers ?? [] });
    sessionId = r.sessionId;
    rec({ driver: "session", sessionId, result: r });
  }
  if (scenario === "cancel") {
    const pidFile = path.join(cfg.cwd, "sleeper.pid");
    const prompt = ctx.request(methods.agent.session.prompt, { sessionId, prompt: text(cfg.prompts[0]) });
    await waitUpdate((u) => u.sessionUpdate === "tool_call" && u.kind === "execute");
    // The command writes its pid and then sleeps.
    for (let i = 0; i < 3000 && !(fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim()); i++) await sleep(10);
    let closed;
    if (cfg.close) {
      // session/close ends the prompt as a cancel would, then frees the session.
      closed = ctx.request(methods.agent.session.close, { sessionId });
    } else {
      await ctx.notify(methods.agent.session.cancel, { sessionId });
    }
    const r = await prompt;
    rec({ driver: "stop", stopReason: r.stopReason });
    if (cfg.close) {
      rec({ driver: "closed", result: await closed });
      // Idempotent: the SDK takes the second close's Resource not found as closed.
      rec({ driver: "closed", result: await ctx.request(methods.agent.session.close, { sessionId }) });
      await rpcError("prompt closed", ctx.request(methods.agent.session.prompt, { sessionId, prompt: text("hello?") }));
    }
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    rec({ driver: "alive", pid, alive });
    return;
  }
  if (scenario === "hang") {
    ctx.request(methods.agent.session.prompt, { sessionId, prompt: text(cfg.prompts[0]) }).catch((e) => rec({ driver: "rpc_error", what: "prompt", message: String(e.message ?? e) }));
    const e = await exited;
    rec({ driver: "exit", code: e.code, signal: e.signal });
    rec({ driver: "done" });
    process.exit(0);
  }
  for (const p of cfg.prompts ?? []) {
    const r = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: text(p) });
    rec({ driver: "stop", stopReason: r.stopReason });
  }
  if (cfg.waitPlanDone) {
    await waitUpdate((u) => u.sessionUpdate === "plan" && u.entries.length > 0 && u.entries.every((e) => e.status === "completed"));
  }
}

try {
  await app.connectWith(stream, run);
  child.stdin.end();
  const e = await exited;
  rec({ driver: "exit", code: e.code, signal: e.signal });
  rec({ driver: "done" });
} catch (e) {
  rec({ driver: "error", message: String(e?.stack ?? e) });
  child.kill("SIGKILL");
  process.exitCode = 1;
}
