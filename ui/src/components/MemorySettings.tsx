// Settings › Memory: choose a preset or custom trunk + cache budgets and how the trunk's layers
// are placed under them (the longest prefix, or by measured cost), see the plan and the s/token
// forecast before applying, and apply without a restart (after the reply in progress).
// Owns: the choice being edited, parsing "3 GB"/"300 KB" sizes (decimal units, as the engine
// prints them), the preview of a custom choice, and the apply's progress and result.
// Must not: plan: every number comes from k3_plan on the loaded model's footprint — in the page
// (the wasm planner, from the footprint the view carries: instant as a budget is dragged or a
// context length typed), else from the backend (plan_preview, memory_what_if) when the module
// could not load or the layers are placed by cost (planned at rates only the backend measures).
// Applying always goes through the backend, which plans again.
import { useEffect, useMemo, useState } from "preact/hooks";
import { planInPage } from "../plan/pagePlans";
import { type Planner, planner as loadPagePlanner } from "../plan/wasmPlanner";
import type { MemoryChoice, MemoryView, ModelInfo, Placement, PlanPreview, PresetName } from "../generated/ipc";
import * as engine from "../api/engine";
import { formatGB } from "../state/format";

const UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12 };

/** "3 GB" → 3e9, "300kb" → 3e5, "2.5" → 2.5e9 (GB when no unit); null when not a size. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?b)?\s*$/i.exec(text);
  if (!m) return null;
  const bytes = Number(m[1]) * UNITS[(m[2] ?? "gb").toLowerCase()]!;
  return Number.isFinite(bytes) && bytes > 0 ? Math.round(bytes) : null;
}

const same = (a: MemoryChoice, b: MemoryChoice) => JSON.stringify(a) === JSON.stringify(b);
const label = (c: MemoryChoice) => (c.kind === "preset" ? c.name : "custom");

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

/** A slider position 0…SLIDER_STEPS ↔ bytes between `min` and `max`, logarithmic (budgets span
 * kilobytes to hundreds of gigabytes). */
const SLIDER_STEPS = 1000;
export const toSlider = (bytes: number, min: number, max: number) =>
  max <= min ? 0 : Math.round((Math.log(Math.min(Math.max(bytes, min), max) / min) / Math.log(max / min)) * SLIDER_STEPS);
export const fromSlider = (step: number, min: number, max: number) => (max <= min ? min : Math.round(min * (max / min) ** (step / SLIDER_STEPS)));

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
  const [view, setView] = useState<MemoryView | null>(null);
  const [pagePlanner, setPagePlanner] = useState<Planner | null>(null);
  useEffect(() => {
    loadPagePlanner().then(setPagePlanner, () => setPagePlanner(null));
  }, []);
  const [error, setError] = useState<string | null>(null);
  const [choice, setChoice] = useState<MemoryChoice | null>(null);
  const [trunkText, setTrunkText] = useState("");
  const [cacheText, setCacheText] = useState("");
  const [custom, setCustom] = useState<PlanPreview | null>(null);
  const [applying, setApplying] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [contextText, setContextText] = useState("");
  const [placement, setPlacement] = useState<Placement>("prefix");

  const learn = (v: MemoryView) => {
    setView(v);
    setChoice(v.current);
    // A saved placement by cost means nothing to a model without a packed trunk: prefix it is.
    setPlacement(v.streamedTrunk ? v.placement : "prefix");
    setContextText(String(v.contextLength));
    if (v.current.kind === "custom") {
      setTrunkText(formatGB(v.current.trunkBytes));
      setCacheText(formatGB(v.current.cacheBytes));
    }
  };
  useEffect(() => {
    engine.memorySettings().then(learn, (e) => setError(e.message));
  }, []);

  // A custom choice is previewed as it is typed, at the context length typed.
  const trunk = parseSize(trunkText);
  const cache = parseSize(cacheText);
  const context = /^\s*\d+\s*$/.test(contextText) ? Number(contextText) : null;
  const contextOk = context !== null && !!view && context >= 1 && context <= view.maxContextLength;
  // The page plans the prefix placement; a placement by cost is planned by the backend.
  const pagePlans = !!pagePlanner && placement === "prefix";
  useEffect(() => {
    if (pagePlans || choice?.kind !== "custom" || trunk === null || cache === null || !contextOk) return setCustom(null);
    let live = true;
    const c: MemoryChoice = { kind: "custom", trunkBytes: trunk, cacheBytes: cache };
    engine.planPreview(c, context, placement).then((p) => live && setCustom(p), (e) => live && setError(e.message));
    return () => void (live = false);
  }, [pagePlans, choice?.kind, trunk, cache, context, contextOk, placement]);
  // Another context length or placement changes every preset's plan.
  const [whatIf, setWhatIf] = useState<MemoryView | null>(null);
  useEffect(() => {
    if (pagePlans || !view || !contextOk || (context === view.contextLength && placement === view.placement)) return setWhatIf(null);
    let live = true;
    engine.memoryWhatIf(context!, placement).then((v) => live && setWhatIf(v), (e) => live && setError(e.message));
    return () => void (live = false);
  }, [pagePlans, view, context, contextOk, placement]);
  // In the page: every preset and the custom choice, re-planned on every keystroke or drag.
  const inPage = useMemo(() => {
    if (!pagePlans || !pagePlanner || !view || !contextOk) return null;
    const plan = (c: MemoryChoice) => planInPage(pagePlanner, view.planner, c, context!, view.presets[0]?.layers ?? 0);
    return {
      presets: view.presets.map((p) => plan(p.choice)),
      custom: trunk !== null && cache !== null ? plan({ kind: "custom", trunkBytes: trunk, cacheBytes: cache }) : null,
    };
  }, [pagePlans, pagePlanner, view, context, contextOk, trunk, cache]);

  if (error && !view) return <section class="settings-section"><h2>Memory</h2><p role="alert">{error}</p></section>;
  if (!view || !choice) return <section class="settings-section"><h2>Memory</h2><p>Measuring this machine…</p></section>;

  const selected: MemoryChoice | null =
    choice.kind === "custom" ? (trunk !== null && cache !== null ? { kind: "custom", trunkBytes: trunk, cacheBytes: cache } : null) : choice;
  const shown = whatIf ?? view;
  // Until the backend's plans for another placement arrive, the presets shown are the old ones.
  const planning = !inPage && shown.previewPlacement !== placement;
  const presets = inPage?.presets ?? shown.presets;
  const shared = <T,>(of: (p: PlanPreview) => T | null): T | null => {
    const first = presets[0] ? of(presets[0]) : null;
    return presets.length > 1 && presets.every((p) => of(p) === first) ? first : null;
  };
  const sharedContext = shared((p) => p.defaultContext);
  const sharedBatch = shared((p) => (p.largestBatch !== null && p.largestBatch > 1 ? p.largestBatch : null));
  const customPreview = inPage ? inPage.custom : custom;
  const preview = planning ? null : choice.kind === "custom" ? customPreview : (presets.find((p) => same(p.choice, choice)) ?? null);
  const contextChanged = contextOk && context !== view.contextLength;
  const changed = !!selected && (!same(selected, view.current) || contextChanged || placement !== view.placement);
  const canApply = !!selected && contextOk && !!preview && !preview.problem && preview.headroomBytes >= 0 && !applying && changed;

  const apply = async () => {
    if (!selected) return;
    setApplying("Waiting for the reply in progress…");
    setDone(null);
    setError(null);
    try {
      const r = await engine.applyMemory(
        selected,
        (e) => {
          if (e.layersTotal > 0) setApplying(`Pinning trunk layers: ${e.layersDone}/${e.layersTotal}`);
        },
        contextChanged ? context : null,
        placement,
      );
      learn(r.view);
      onApplied?.(r.model);
      setDone(`Applied ${label(selected)} in ${(r.tookMs / 1000).toFixed(1)} s, without a restart: ${r.model.memory}`);
    } catch (e) {
      setError((e as { message: string }).message);
    } finally {
      setApplying(null);
    }
  };

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
            <input type="radio" name="memory-placement" value="prefix" checked={placement === "prefix"} onChange={() => setPlacement("prefix")} />
            <strong>Longest prefix</strong> <span class="muted">the first layers that fit stay in RAM, the rest stream</span>
          </label>
          <label class={view.costPlacementNote ? "refused" : ""}>
            <input
              type="radio"
              name="memory-placement"
              value="cost"
              checked={placement === "cost"}
              disabled={!!view.costPlacementNote && view.placement !== "cost"}
              onChange={() => setPlacement("cost")}
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
              <input type="radio" name="memory-preset" value={name} checked={same(choice, p.choice)} onChange={() => setChoice(p.choice)} />
              <strong>{name}</strong> <PlanLine p={p} sharedContext={sharedContext} sharedBatch={sharedBatch} />
            </label>
          );
        })}
        <label>
          <input type="radio" name="memory-preset" value="custom" checked={choice.kind === "custom"} onChange={() => setChoice({ kind: "custom", trunkBytes: trunk ?? view.minTrunkBytes, cacheBytes: cache ?? view.minCacheBytes })} />
          <strong>custom</strong>
        </label>
      </fieldset>
      {choice.kind === "custom" && (
        <div class="custom-budget">
          <label>
            Trunk budget <input aria-label="Trunk budget" value={trunkText} placeholder={formatGB(view.minTrunkBytes)} onInput={(e) => setTrunkText(e.currentTarget.value)} />
            <BudgetSlider label="Trunk budget" bytes={trunk} min={view.minTrunkBytes} max={Math.max(view.minTrunkBytes * 2, view.wholeTrunkBytes * 1.05)} onBytes={(b) => setTrunkText(formatGB(b))} />
          </label>
          <label>
            Cache budget <input aria-label="Cache budget" value={cacheText} placeholder={formatGB(view.minCacheBytes)} onInput={(e) => setCacheText(e.currentTarget.value)} />
            <BudgetSlider label="Cache budget" bytes={cache} min={view.minCacheBytes} max={Math.max(view.minCacheBytes * 2, view.planner.machine.total_bytes)} onBytes={(b) => setCacheText(formatGB(b))} />
          </label>
          <p class="muted">
            Sizes like "3 GB" or "300 KB". Smallest: trunk {formatGB(view.minTrunkBytes)} (one ring slot; a layer larger than it streams through it a matrix at a time), cache {formatGB(view.minCacheBytes)}; the whole trunk is{" "}
            {formatGB(view.wholeTrunkBytes)}.
          </p>
          {(trunk === null || cache === null) && <p class="plan-problem">Give both budgets as sizes.</p>}
          {customPreview && (
            <p data-testid="custom-preview" data-planned={inPage ? "page" : "app"}>
              <PlanLine p={customPreview} />
            </p>
          )}
        </div>
      )}
      <label class="context-length">
        Context length{" "}
        <input aria-label="Context length" inputMode="numeric" value={contextText} onInput={(e) => setContextText(e.currentTarget.value)} /> positions
        <span class="muted">
          {" "}
          {contextOk
            ? `· KV cache ${formatGB(context! * view.kvBytesPerPosition)} per conversation (${formatGB(view.kvBytesPerPosition)} a position)`
            : `· a whole number from 1 to ${view.maxContextLength}`}
        </span>
      </label>
      {view.forecastNote && <p class="muted">{view.forecastNote}</p>}
      <div class="settings-actions">
        <button type="button" class="primary" disabled={!canApply} onClick={() => void apply()}>
          Apply {selected ? label(selected) : ""}
        </button>
        {applying && <span role="status">{applying}</span>}
      </div>
      {done && <p role="status" data-testid="memory-applied">{done}</p>}
      {error && view && <p role="alert">{error}</p>}
    </section>
  );
}
