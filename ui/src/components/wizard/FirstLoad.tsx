// The first load's progress: the preset it loads with, the trunk layers pinned in memory so far, and
// the memory in use with the time taken.
import type { JobView } from "../../state/setup";
import { firstLoadBar, firstLoadLayers, firstLoadMemory } from "../../state/wizard";

export function FirstLoad({ preset, progress }: { preset: string; progress: JobView["firstLoad"] }) {
  const pinning = firstLoadBar(progress);
  return (
    <div class="first-load" data-testid="first-load">
      <p>Loading the model with the {preset} preset…</p>
      {pinning && progress && (
        <div class="bar" role="progressbar" aria-valuenow={pinning.now}>
          <div style={{ width: pinning.width }} />
          <span>{firstLoadLayers(progress)}</span>
        </div>
      )}
      {progress && <p class="legend">{firstLoadMemory(progress)}</p>}
    </div>
  );
}
