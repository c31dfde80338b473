// MCP tool servers, the controller: Settings › Tools' list, the form that adds or edits a server,
// "List tools", Remove and revoking an "always allow"; and a conversation's view of the servers it
// may offer (components/ConversationTools.tsx).
// Owns: every engine call about tool servers. Must not: render, start a server except on "List
// tools", or let an engine error escape (it becomes `message` or the listed entry's words).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { ServerToolInfo, ToolServer } from "../generated/ipc";
import { EMPTY_TOOL_FORM, parseToolForm, type ToolServerForm, toToolServerForm } from "../state/tools";

/** Each server's listed tools, or the words of their listing (in progress or failed). */
export type Listed = Record<string, ServerToolInfo[] | string>;

/** Lists a server's tools on demand into `listed`. */
function useListedTools(progress: string) {
  const [listed, setListed] = useState<Listed>({});
  const list = async (id: string) => {
    setListed((l) => ({ ...l, [id]: progress }));
    try {
      const tools = await engine.listServerTools(id);
      setListed((l) => ({ ...l, [id]: tools }));
    } catch (err) {
      setListed((l) => ({ ...l, [id]: engine.toIpcError(err).message }));
    }
  };
  return { listed, setListed, list };
}

export interface ToolServers {
  list: ToolServer[] | null;
  form: ToolServerForm;
  message: string | null;
  listed: Listed;
  edit(patch: Partial<ToolServerForm>): void;
  editServer(s: ToolServer): void;
  cancelEdit(): void;
  save(): Promise<void>;
  listTools(id: string): Promise<void>;
  remove(id: string): Promise<void>;
  revoke(id: string, tool: string): Promise<void>;
}

export function useToolServers(): ToolServers {
  const [list, setList] = useState<ToolServer[] | null>(null);
  const [form, setForm] = useState<ToolServerForm>(EMPTY_TOOL_FORM);
  const [message, setMessage] = useState<string | null>(null);
  const { listed, setListed, list: listTools } = useListedTools("Starting the server and listing its tools…");
  useEffect(() => {
    void engine.toolServers().then(setList).catch((e) => setMessage(engine.toIpcError(e).message));
  }, []);
  const replace = (s: ToolServer) => setList([...(list ?? []).filter((x) => x.id !== s.id), s]);
  const act = async (f: () => Promise<unknown>) => {
    try {
      await f();
      setMessage(null);
    } catch (err) {
      setMessage(engine.toIpcError(err).message);
    }
  };
  const save = async () => {
    const parsed = parseToolForm(form);
    if (typeof parsed === "string") return setMessage(parsed);
    try {
      replace(await engine.saveToolServer(parsed));
      setListed(({ [parsed.id]: _, ...rest }) => rest);
      setForm(EMPTY_TOOL_FORM);
      setMessage(null);
    } catch (err) {
      setMessage(engine.toIpcError(err).message);
    }
  };
  return {
    list,
    form,
    message,
    listed,
    edit: (patch) => setForm({ ...form, ...patch }),
    editServer: (s) => setForm(toToolServerForm(s)),
    cancelEdit: () => setForm(EMPTY_TOOL_FORM),
    save,
    listTools,
    remove: (id) => act(async () => (await engine.removeToolServer(id), setList((list ?? []).filter((x) => x.id !== id)))),
    revoke: (id, tool) => act(async () => replace(await engine.revokeToolPermission(id, tool))),
  };
}

/** The servers a conversation may offer (null while read; none when they cannot be read), and
 * their tools listed when the user asks. */
export function useConversationServers() {
  const [servers, setServers] = useState<ToolServer[] | null>(null);
  const { listed, list } = useListedTools("Listing…");
  useEffect(() => {
    void engine.toolServers().then(setServers).catch(() => setServers([]));
  }, []);
  return { servers, listed, list };
}
