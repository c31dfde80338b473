// Who answers the open conversation — this computer or a remote backend — and, for a remote one, the
// marker that says its prompts leave this machine and for which host.
// Owns: the "Answered by" choice (the list, controllers/backends.ts's, re-read each time it is
// opened, so a backend added in Settings appears) and the marker's words. Changing it is the user's explicit choice per conversation.
import { useBackendChoices, useBackendHost } from "../controllers/backends";
import type { Conversation } from "../generated/ipc";

const LOCAL = "";

export function BackendPicker({
  conversation,
  busy,
  onChoose,
}: {
  conversation: Conversation | null;
  busy: boolean;
  onChoose(backend: string | null): void;
}) {
  const { backends, refresh } = useBackendChoices(conversation?.id);
  const chosen = conversation?.backend ?? null;
  if (!conversation || (backends.length === 0 && chosen === null)) return null;
  return (
    <label class="backend-picker">
      Answered by
      <select
        aria-label="Answered by"
        data-testid="backend-picker"
        value={chosen ?? LOCAL}
        disabled={busy}
        onFocus={refresh}
        onChange={(e) => onChoose(e.currentTarget.value === LOCAL ? null : e.currentTarget.value)}
      >
        <option value={LOCAL}>This computer</option>
        {backends.map((b) => (
          <option key={b.id} value={b.id}>
            {b.name} ({b.host})
          </option>
        ))}
        {chosen !== null && !backends.some((b) => b.id === chosen) && <option value={chosen}>{chosen} (removed)</option>}
      </select>
    </label>
  );
}

/** The marker over a remote conversation; nothing for one answered here. */
export function RemoteMarker({ conversation }: { conversation: Conversation | null }) {
  const id = conversation?.backend ?? null;
  // undefined while the list is read; null when the backend is no longer in it.
  const host = useBackendHost(id);
  if (id === null) return null;
  return (
    <p class="remote-marker" role="note" data-testid="remote-marker">
      {host === null
        ? `Answered by backend “${id}”, which was removed: choose who answers before sending`
        : `Prompts leave this machine${host ? ` — ${host}` : ""}`}
    </p>
  );
}
