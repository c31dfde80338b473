// The loaded model: name, size, memory, "Open model folder…", and the demo-model banner.
// Owns: `[data-testid=demo-banner]`. Sizes in GB (1e9 B) with exact bytes in the tooltip.
import type { ModelInfo } from "../generated/ipc";
import { formatBytesExact, formatGB } from "../state/format";

interface Props {
  model: ModelInfo | null;
  loading: boolean;
  busy: boolean;
  onOpenFolder(): void;
}

export const DEMO_TEXT =
  "Demo model: a 3.8 M-parameter Kimi K3-shaped model trained on Jane Austen's novels — expect simple English, not answers. Open a real Kimi K3 folder to chat.";

export function DemoBanner({ model }: { model: ModelInfo | null }) {
  if (!model?.isDemo) return null;
  return (
    <p class="demo-banner" data-testid="demo-banner" role="note">
      {DEMO_TEXT}
    </p>
  );
}

export function ModelBar({ model, loading, busy, onOpenFolder }: Props) {
  return (
    <div class="model-bar" aria-label="Model">
      {loading ? (
        <span class="model-name">Loading model…</span>
      ) : model ? (
        <>
          <span
            class="model-name"
            title={`${model.path}\n${model.layers} layers · ${model.routedExperts} experts, ${model.expertsPerToken} per token`}
          >
            {model.name}
          </span>
          <span class="model-meta" title={formatBytesExact(model.checkpointBytes)}>
            {formatGB(model.checkpointBytes)} checkpoint
          </span>
          <span class="model-meta">{model.memory}</span>
        </>
      ) : (
        <span class="model-name">No model loaded</span>
      )}
      <button type="button" aria-label="Open model folder" disabled={loading || busy} onClick={onOpenFolder}>
        Open model folder…
      </button>
    </div>
  );
}
