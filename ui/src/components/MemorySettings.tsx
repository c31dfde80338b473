// Settings › Memory: choose a preset or custom trunk + cache budgets and how the trunk's layers
// are placed under them (the longest prefix, or by measured cost), see the plan and the s/token
// forecast before applying, and apply without a restart (after the reply in progress).
// Owns: drawing the choices, the plans and the apply's progress. The view, the edits, the plans
// and the apply are controllers/memory.ts's; sizes and slider scale state/memory.ts's.
import { useMemory } from "../controllers/memory";
import type { ModelInfo, PlanPreview, PresetName } from "../generated/ipc";
import { formatGB } from "../state/format";
import { choiceLabel as label, fromSlider, SLIDER_STEPS, sameChoice as same, toSlider } from "../state/memory";

/** Each row's default context and conversations at once, unless every preset shares the figure
 * (then the legend says it once). */
function PlanLine({ p, sharedContext = null, sharedBatch = null }: { p: PlanPreview; sharedContext?: number | null; sharedBatch?: number | null }) {
  if (p.problem) return <span class="plan-problem">{p.problem}</span>;
  const seconds = p.secondsLow !== null && p.secondsHigh !== null ? ` · ${p.secondsLow.toPrecision(2)}–${p.secondsHigh.toPrecision(2)} s/token` : "";
  return (
    <span class="plan-line">
      {p.pinnedLayers}/{p.layers} layers pinned, {p.ringSlots} ring slot{p.ringSlots === 1 ? "" : "s"}, {p.expertSlots} expert slots · plan{" "}
      {formatGB(p.totalBytes)} · headroom {formatGB(Math.max(0, p.headroomBytes))}
      {p.headroomBytes < 0 && " (short)"}
      {p.tight && p.headroomBytes >= 0 && " (tight)"}
      {seconds}
      {p.defaultContext !== null && p.defaultContext !== sharedContext && ` · default context ${p.defaultContext.toLocaleString("en-US")} positions`}
      {p.largestBatch !== null && p.largestBatch > 1 && p.largestBatch !== sharedBatch && ` · memory for ${p.largestBatch} conversations at once`}
    </span>
  );
}

function BudgetSlider({ label, bytes, min, max, onBytes }: { label: string; bytes: number | null; min: number; max: number; onBytes(b: number): void }) {
  return (
    <input
      type="range"
      aria-label={`${label} slider`}
      min={0}
      max={SLIDER_STEPS}
      value={toSlider(bytes ?? min, min, max)}
      onInput={(e) => onBytes(fromSlider(Number(e.currentTarget.value), min, max))}
    />
  );
}

export function MemorySettings({ onApplied }: { onApplied?(model: ModelInfo): void }) {
  const m = useMemory(onApplied);
  const { shown, error, trunkText, cacheText, contextText, placement, applying, done } = m;
  if (error && !shown) return <section class="settings-section"><h2>Memory</h2><p role="alert">{error}</p></section>;
  if (!shown) return <section class="settings-section"><h2>Memory</h2><p>Measuring this machine…</p></section>;
  const { view, choice, selected, trunk, cache, context, contextOk, presets, sharedContext, sharedBatch, planning, customPreview, canApply } = shown;

  return (
    <section class="settings-section memory-settings" aria-labelledby="memory-settings-title" data-testid="memory-settings">
      <h2 id="memory-settings-title">Memory</h2>
      <p class="muted">
        The budget changes only the speed: replies are byte-identical at every preset. A new choice applies after the reply in progress, without a
        restart. In force: <strong data-testid="memory-current">{label(view.current)}</strong>
        {view.placement === "cost" && " placed by measured cost"}
        {view.currentPlan && <> — <PlanLine p={view.currentPlan} /></>}
      </p>
      {!view.streamedTrunk && (
        <p class="muted">This model has no packed trunk, so its trunk stays whole in RAM; presets change the expert cache only.</p>
      )}
      {/* Without a packed trunk every layer stays in RAM (said just above): nothing to place. */}
      {view.streamedTrunk && (
        <fieldset class="placement-choices" data-testid="memory-placement">
          <legend>Layer placement</legend>
          <label>
            <input type="radio" name="memory-placement" value="prefix" checked={placement === "prefix"} onChange={() => m.setPlacement("prefix")} />
            <strong>Longest prefix</strong> <span class="muted">the first layers that fit stay in RAM, the rest stream</span>
          </label>
          <label class={view.costPlacementNote ? "refused" : ""}>
            <input
              type="radio"
              name="memory-placement"
              value="cost"
              checked={placement === "cost"}
              disabled={!!view.costPlacementNote && view.placement !== "cost"}
              onChange={() => m.setPlacement("cost")}
            />
            <strong>By measured cost</strong>{" "}
            <span class="muted">
              each layer in RAM, held compressed or streamed, and the trunk/cache split, for the fewest seconds per token at this machine's measured
              drive and CPU rates
            </span>
          </label>
          {view.costPlacementNote && <p class="muted" data-testid="cost-placement-note">{view.costPlacementNote}</p>}
        </fieldset>
      )}
      <fieldset class="preset-choices">
        {/* In the legend's line, so nothing below moves while the plans arrive. */}
        <legend>
          Preset
          {sharedContext !== null && <span class="muted"> · default context {sharedContext.toLocaleString("en-US")} positions for each</span>}
          {sharedBatch !== null && <span class="muted"> · memory for {sharedBatch} conversations at once</span>}
          {planning && <span role="status" class="muted"> · planning by measured cost…</span>}
        </legend>
        {presets.map((p) => {
          const name = (p.choice as { name: PresetName }).name;
          return (
            <label key={name} class={p.problem ? "refused" : ""}>
              <input type="radio" name="memory-preset" value={name} checked={same(choice, p.choice)} onChange={() => m.choose(p.choice)} />
              <strong>{name}</strong> <PlanLine p={p} sharedContext={sharedContext} sharedBatch={sharedBatch} />
            </label>
          );
        })}
        <label>
          <input type="radio" name="memory-preset" value="custom" checked={choice.kind === "custom"} onChange={m.chooseCustom} />
          <strong>custom</strong>
        </label>
      </fieldset>
      {choice.kind === "custom" && (
        <div class="custom-budget">
          <label>
            Trunk budget <input aria-label="Trunk budget" value={trunkText} placeholder={formatGB(view.minTrunkBytes)} onInput={(e) => m.setTrunkText(e.currentTarget.value)} />
            <BudgetSlider label="Trunk budget" bytes={trunk} min={view.minTrunkBytes} max={Math.max(view.minTrunkBytes * 2, view.wholeTrunkBytes * 1.05)} onBytes={(b) => m.setTrunkText(formatGB(b))} />
          </label>
          <label>
            Cache budget <input aria-label="Cache budget" value={cacheText} placeholder={formatGB(view.minCacheBytes)} onInput={(e) => m.setCacheText(e.currentTarget.value)} />
            <BudgetSlider label="Cache budget" bytes={cache} min={view.minCacheBytes} max={Math.max(view.minCacheBytes * 2, view.planner.machine.total_bytes)} onBytes={(b) => m.setCacheText(formatGB(b))} />
          </label>
          <p class="muted">
            Sizes like "3 GB" or "300 KB". Smallest: trunk {formatGB(view.minTrunkBytes)} (one ring slot; a layer larger than it streams through it a matrix at a time), cache {formatGB(view.minCacheBytes)}; the whole trunk is{" "}
            {formatGB(view.wholeTrunkBytes)}.
          </p>
          {(trunk === null || cache === null) && <p class="plan-problem">Give both budgets as sizes.</p>}
          {customPreview && (
            <p data-testid="custom-preview" data-planned={shown.plannedInPage ? "page" : "app"}>
              <PlanLine p={customPreview} />
            </p>
          )}
        </div>
      )}
      <label class="context-length">
        Context length{" "}
        <input aria-label="Context length" inputMode="numeric" value={contextText} onInput={(e) => m.setContextText(e.currentTarget.value)} /> positions
        <span class="muted">
          {" "}
          {contextOk
            ? `· KV cache ${formatGB(context! * view.kvBytesPerPosition)} per conversation (${formatGB(view.kvBytesPerPosition)} a position)`
            : `· a whole number from 1 to ${view.maxContextLength}`}
        </span>
      </label>
      {view.forecastNote && <p class="muted">{view.forecastNote}</p>}
      <div class="settings-actions">
        <button type="button" class="primary" disabled={!canApply} onClick={() => void m.apply()}>
          Apply {selected ? label(selected) : ""}
        </button>
        {applying && <span role="status">{applying}</span>}
      </div>
      {done && <p role="status" data-testid="memory-applied">{done}</p>}
      {error && view && <p role="alert">{error}</p>}
    </section>
  );
}
