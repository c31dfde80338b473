// A conversation's tools (in its settings): which of Settings › Tools' servers it offers the model,
// which of their tools it turns off, and whether a reply to the user must call one.
// Owns: the selectors `.conversation-tools`, `[data-server]`, `[data-tool-switch]`.
// Must not: start a server by itself: a server's tools are listed only when the user asks.
import { useConversationServers } from "../controllers/tools";
import type { ToolsForm } from "../state/chatSettings";

const key = (server: string, tool: string) => `${server}/${tool}`;

export function ConversationTools({ form, onChange }: { form: ToolsForm; onChange(f: ToolsForm): void }) {
  const { servers, listed: tools, list } = useConversationServers();
  const toggleServer = (id: string, on: boolean) =>
    onChange({ ...form, toolServers: on ? [...form.toolServers, id] : form.toolServers.filter((s) => s !== id) });
  const toggleTool = (server: string, tool: string, on: boolean) => {
    const k = key(server, tool);
    onChange({ ...form, toolsOff: on ? form.toolsOff.filter((t) => t !== k) : [...form.toolsOff, k] });
  };
  if (servers === null) return null;
  return (
    <fieldset class="conversation-tools">
      <legend>Tools</legend>
      {servers.length === 0 && <p class="hint">No tool servers yet: add one in Settings › Tools.</p>}
      {servers.map((s) => {
        const on = form.toolServers.includes(s.id);
        const listed = tools[s.id];
        return (
          <div class="tool-server-row" data-server={s.id} key={s.id}>
            <label>
              <input type="checkbox" aria-label={`Offer ${s.name}`} checked={on} onChange={(e) => toggleServer(s.id, e.currentTarget.checked)} />
              {s.name}
            </label>
            {on && listed === undefined && (
              <button type="button" class="link" aria-label={`Choose the tools of ${s.name}`} onClick={() => void list(s.id)}>
                Choose tools
              </button>
            )}
            {on && typeof listed === "string" && <span class="hint">{listed}</span>}
            {on && Array.isArray(listed) && (
              <div class="tool-switches">
                {listed.map((t) => (
                  <label key={t.name} title={t.description ?? undefined}>
                    <input
                      type="checkbox"
                      data-tool-switch={t.name}
                      aria-label={`Offer the tool ${t.name}`}
                      checked={!form.toolsOff.includes(key(s.id, t.name))}
                      onChange={(e) => toggleTool(s.id, t.name, e.currentTarget.checked)}
                    />
                    <code>{t.name}</code>
                  </label>
                ))}
              </div>
            )}
          </div>
        );
      })}
      {servers.length > 0 && (
        <label class="tool-required">
          <input
            type="checkbox"
            aria-label="Replies to my messages must call a tool"
            checked={form.toolChoice === "required"}
            onChange={(e) => onChange({ ...form, toolChoice: e.currentTarget.checked ? "required" : "auto" })}
          />
          Replies to my messages must call a tool
        </label>
      )}
    </fieldset>
  );
}
