// Settings › Tools: the MCP servers K3 may call in chats. Each is a program this app starts (its
// whole environment is what the form lists) or a Streamable HTTP address (http:// on this machine,
// https:// elsewhere, with an optional key).
// Owns: drawing the list (how each is reached, the tools it always allows, each revocable), the
// form that adds or edits one, "List tools" (its tools and their argument schemas), Remove. The
// calls are controllers/tools.ts's, the form's checks state/tools.ts's.
// Must not: show a kept key.
import { useToolServers } from "../controllers/tools";
import type { ServerToolInfo } from "../generated/ipc";
import { reachedBy, type ToolServerForm as Form } from "../state/tools";
import { PlainText } from "./PlainText";

export function ToolSettings() {
  const ctl = useToolServers();
  const { list, form, message, listed } = ctl;

  return (
    <section class="settings-section" aria-labelledby="tools-title" data-testid="tool-settings">
      <h2 id="tools-title">Tools</h2>
      <p class="muted">
        MCP servers whose tools K3 may call in a chat. No call runs until you allow it, unless you chose “Always allow” for
        that tool; a chat offers the servers its settings turn on.
      </p>
      {list === null ? (
        <p class="muted">Reading the tool servers…</p>
      ) : list.length === 0 ? (
        <p class="muted">No tool servers: K3 only talks.</p>
      ) : (
        <ul class="tool-server-list" data-testid="tool-server-list">
          {list.map((s) => (
            <li key={s.id} data-server={s.id}>
              <strong>{s.name}</strong> <span class="muted">{reachedBy(s)}</span>
              <span class="muted">
                {" "}· {s.enabled ? "offered to new chats" : "not offered to new chats"} · calls time out after {s.timeoutSeconds} s
              </span>
              <span class="row">
                <button type="button" data-testid="tool-list" onClick={() => void ctl.listTools(s.id)}>
                  List tools
                </button>
                <button type="button" onClick={() => ctl.editServer(s)}>
                  Edit
                </button>
                <button type="button" onClick={() => void ctl.remove(s.id)}>
                  Remove
                </button>
              </span>
              {s.alwaysAllowed.length > 0 && (
                <p class="always-allowed">
                  Always allowed:{" "}
                  {s.alwaysAllowed.map((t) => (
                    <span class="chip" key={t}>
                      <code>{t}</code>
                      <button type="button" aria-label={`Ask again before ${t}`} onClick={() => void ctl.revoke(s.id, t)}>
                        Revoke
                      </button>
                    </span>
                  ))}
                </p>
              )}
              <ListedTools listed={listed[s.id]} />
            </li>
          ))}
        </ul>
      )}
      <ServerForm
        form={form}
        set={ctl.edit}
        onSubmit={(e) => {
          e.preventDefault();
          void ctl.save();
        }}
        onCancel={ctl.cancelEdit}
      />
      {message && <p class="field-error" role="alert">{message}</p>}
    </section>
  );
}

function ListedTools({ listed }: { listed: ServerToolInfo[] | string | undefined }) {
  if (listed === undefined) return null;
  if (typeof listed === "string") return <p class="muted" role="status" data-testid="tool-list-result">{listed}</p>;
  return (
    <div class="listed-tools" data-testid="tool-list-result">
      {listed.length === 0 && <p class="muted">The server offers no tools.</p>}
      {listed.map((t) => (
        <details key={t.name} data-tool={t.name}>
          <summary>
            <code>{t.name}</code> <span class="muted">{t.description ?? ""}</span>
          </summary>
          <div class="tool-text">
            <PlainText text={t.schema} />
          </div>
        </details>
      ))}
    </div>
  );
}

function ServerForm({ form, set, onSubmit, onCancel }: { form: Form; set(p: Partial<Form>): void; onSubmit(e: Event): void; onCancel(): void }) {
  return (
    <form class="tool-form" aria-label={form.id ? `Edit ${form.name}` : "Add a tool server"} noValidate onSubmit={onSubmit}>
      <h3>{form.id ? `Edit ${form.name}` : "Add a tool server"}</h3>
      <label>
        Name
        <input type="text" data-testid="tool-name" value={form.name} placeholder="Files" onInput={(e) => set({ name: e.currentTarget.value })} />
      </label>
      <label>
        Reached by
        <select data-testid="tool-kind" value={form.kind} onChange={(e) => set({ kind: e.currentTarget.value as Form["kind"] })}>
          <option value="stdio">A program this app starts (stdio)</option>
          <option value="http">An address (Streamable HTTP)</option>
        </select>
      </label>
      {form.kind === "stdio" ? (
        <>
          <label>
            Program
            <input type="text" spellcheck={false} data-testid="tool-command" value={form.command} placeholder="npx" onInput={(e) => set({ command: e.currentTarget.value })} />
          </label>
          <label>
            Arguments, one per line
            <textarea rows={3} spellcheck={false} data-testid="tool-args" value={form.args} placeholder={"-y\n@modelcontextprotocol/server-filesystem\n/home/me/Documents"} onInput={(e) => set({ args: e.currentTarget.value })} />
          </label>
          <label>
            Environment, NAME=value per line
            <textarea rows={2} spellcheck={false} data-testid="tool-env" value={form.env} placeholder="PATH=/usr/local/bin:/usr/bin" onInput={(e) => set({ env: e.currentTarget.value })} />
            <small class="muted">The program gets only these variables. npx and other scripts need PATH to find node.</small>
          </label>
        </>
      ) : (
        <>
          <label>
            Address
            <input type="url" spellcheck={false} data-testid="tool-url" value={form.url} placeholder="http://127.0.0.1:3001/mcp" onInput={(e) => set({ url: e.currentTarget.value })} />
          </label>
          <label>
            Key (optional{form.id ? "; empty keeps the one kept" : ""})
            <input type="password" autoComplete="off" data-testid="tool-key" value={form.key} onInput={(e) => set({ key: e.currentTarget.value })} />
          </label>
        </>
      )}
      <label>
        Timeout of a call, seconds
        <input type="number" min="1" max="3600" data-testid="tool-timeout" value={form.timeout} onInput={(e) => set({ timeout: e.currentTarget.value })} />
      </label>
      <label class="check">
        <input type="checkbox" checked={form.enabled} onChange={(e) => set({ enabled: e.currentTarget.checked })} /> Offer to new chats
      </label>
      <span class="row">
        <button type="submit" class="primary" data-testid="tool-save">
          {form.id ? "Save server" : "Add server"}
        </button>
        {form.id && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </span>
    </form>
  );
}
