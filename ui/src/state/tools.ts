// Settings › Tools, the pure half: the form that adds or edits an MCP server (a program this app
// starts, with exactly the environment listed, or a Streamable HTTP address) and its checks, and how
// a server is reached, in words. Tested in components/ToolSettings.test.tsx; the controller
// (controllers/tools.ts) talks to the engine, the components draw.
import type { ToolServer, ToolServerInput } from "../generated/ipc";

export interface ToolServerForm {
  id: string;
  name: string;
  kind: "stdio" | "http";
  command: string;
  /** One argument per line. */
  args: string;
  /** NAME=value, one per line. */
  env: string;
  url: string;
  key: string;
  enabled: boolean;
  timeout: string;
}

export const EMPTY_TOOL_FORM: ToolServerForm = { id: "", name: "", kind: "stdio", command: "", args: "", env: "", url: "", key: "", enabled: true, timeout: "60" };

export function toToolServerForm(s: ToolServer): ToolServerForm {
  const t = s.transport;
  const base = { ...EMPTY_TOOL_FORM, id: s.id, name: s.name, enabled: s.enabled, timeout: String(s.timeoutSeconds) };
  return t.kind === "stdio"
    ? { ...base, command: t.command, args: t.args.join("\n"), env: t.env.map((v) => `${v.name}=${v.value}`).join("\n") }
    : { ...base, kind: "http", url: t.url };
}

const lines = (text: string) => text.split("\n").map((l) => l.trim()).filter((l) => l !== "");

/** The server the form describes, or its first problem in words. */
export function parseToolForm(f: ToolServerForm): ToolServerInput | string {
  if (!f.name.trim()) return "Give the server a name.";
  const timeout = Number(f.timeout);
  if (!Number.isInteger(timeout) || timeout < 1 || timeout > 3600) return "The timeout is a whole number of seconds, 1 to 3600.";
  const base = { id: f.id, name: f.name.trim(), enabled: f.enabled, timeoutSeconds: timeout, key: null, clearKey: false };
  if (f.kind === "http") {
    if (!/^https?:\/\/\S+$/i.test(f.url.trim())) return "The address starts with http:// (this machine) or https://.";
    return { ...base, transport: { kind: "http", url: f.url.trim(), hasKey: false }, key: f.key.trim() || null };
  }
  if (!f.command.trim()) return "Enter the program to start (for example npx).";
  const env = [];
  for (const line of lines(f.env)) {
    const at = line.indexOf("=");
    if (at <= 0) return `“${line}” is not NAME=value.`;
    env.push({ name: line.slice(0, at).trim(), value: line.slice(at + 1) });
  }
  return { ...base, transport: { kind: "stdio", command: f.command.trim(), args: lines(f.args), env, workingDir: null } };
}

/** How the server is reached: the program line and the environment's names, or the address. */
export function reachedBy(s: ToolServer): string {
  const t = s.transport;
  if (t.kind === "http") return `${t.url}${t.hasKey ? " · key kept" : ""}`;
  const env = t.env.length === 0 ? "no environment" : `environment: ${t.env.map((v) => v.name).join(", ")}`;
  return `${[t.command, ...t.args].join(" ")} · ${env}`;
}
