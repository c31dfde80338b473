// Settings › Memory, the controller: the memory view, the choice being edited (preset or custom
// budgets, layer placement, context length), the plans shown for it and the apply with its progress.
// Owns: every engine call of the section and what is derived from their answers.
// Must not: plan: every number comes from k3_plan on the loaded model's footprint — in the page
// (the wasm planner, from the footprint the view carries: instant as a budget is dragged or a
// context length typed), else from the backend (plan_preview, memory_what_if) when the module
// could not load or the layers are placed by cost (planned at rates only the backend measures).
// Applying always goes through the backend, which plans again. Render nothing
// (components/MemorySettings.tsx draws).
import { useEffect, useMemo, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { MemoryChoice, MemoryView, ModelInfo, Placement, PlanPreview } from "../generated/ipc";
import { planInPage } from "../plan/pagePlans";
import { type Planner, planner as loadPagePlanner } from "../plan/wasmPlanner";
import { formatGB } from "../state/format";
import { choiceLabel, parseContext, parseSize, sameChoice } from "../state/memory";

/** What the section shows once the view has arrived. */
export interface MemoryShown {
  view: MemoryView;
  choice: MemoryChoice;
  /** The choice as it would be applied (null: a custom budget is not a size). */
  selected: MemoryChoice | null;
  trunk: number | null;
  cache: number | null;
  context: number | null;
  contextOk: boolean;
  /** The context length to apply: the one typed, when it is valid and not the current one. */
  newContext: number | null;
  /** The presets' plans at the context and placement being edited. */
  presets: PlanPreview[];
  /** A figure every preset shares, said once in the legend. */
  sharedContext: number | null;
  sharedBatch: number | null;
  /** The backend is planning another placement; the presets shown are the old ones. */
  planning: boolean;
  customPreview: PlanPreview | null;
  /** Planned in the page (wasm) rather than by the backend. */
  plannedInPage: boolean;
  preview: PlanPreview | null;
  canApply: boolean;
}

export interface Memory {
  /** Null until the view arrives. */
  shown: MemoryShown | null;
  /** The view could not be read, or a plan or the apply failed. */
  error: string | null;
  trunkText: string;
  cacheText: string;
  contextText: string;
  placement: Placement;
  /** The apply's progress while it runs. */
  applying: string | null;
  /** What the last apply did. */
  done: string | null;
  choose(c: MemoryChoice): void;
  chooseCustom(): void;
  setTrunkText(t: string): void;
  setCacheText(t: string): void;
  setContextText(t: string): void;
  setPlacement(p: Placement): void;
  apply(): Promise<void>;
}

export function useMemory(onApplied?: (model: ModelInfo) => void): Memory {
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
  const context = parseContext(contextText);
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

  const shown = view && choice ? derive({ view, choice, trunk, cache, context, contextOk, placement, whatIf, inPage, custom, applying }) : null;

  const apply = async () => {
    if (!shown?.selected) return;
    const selected = shown.selected;
    setApplying("Waiting for the reply in progress…");
    setDone(null);
    setError(null);
    try {
      const r = await engine.applyMemory(
        selected,
        (e) => {
          if (e.layersTotal > 0) setApplying(`Pinning trunk layers: ${e.layersDone}/${e.layersTotal}`);
        },
        shown.newContext,
        placement,
      );
      learn(r.view);
      onApplied?.(r.model);
      setDone(`Applied ${choiceLabel(selected)} in ${(r.tookMs / 1000).toFixed(1)} s, without a restart: ${r.model.memory}`);
    } catch (e) {
      setError((e as { message: string }).message);
    } finally {
      setApplying(null);
    }
  };

  return {
    shown,
    error,
    trunkText,
    cacheText,
    contextText,
    placement,
    applying,
    done,
    choose: setChoice,
    chooseCustom: () => view && setChoice({ kind: "custom", trunkBytes: trunk ?? view.minTrunkBytes, cacheBytes: cache ?? view.minCacheBytes }),
    setTrunkText,
    setCacheText,
    setContextText,
    setPlacement,
    apply,
  };
}

interface Inputs {
  view: MemoryView;
  choice: MemoryChoice;
  trunk: number | null;
  cache: number | null;
  context: number | null;
  contextOk: boolean;
  placement: Placement;
  whatIf: MemoryView | null;
  inPage: { presets: PlanPreview[]; custom: PlanPreview | null } | null;
  custom: PlanPreview | null;
  applying: string | null;
}

/** What the section shows, from the view, the edits and the plans that have arrived. */
function derive(i: Inputs): MemoryShown {
  const { view, choice, trunk, cache, context, contextOk, placement, inPage } = i;
  const selected: MemoryChoice | null =
    choice.kind === "custom" ? (trunk !== null && cache !== null ? { kind: "custom", trunkBytes: trunk, cacheBytes: cache } : null) : choice;
  const shown = i.whatIf ?? view;
  // Until the backend's plans for another placement arrive, the presets shown are the old ones.
  const planning = !inPage && shown.previewPlacement !== placement;
  const presets = inPage?.presets ?? shown.presets;
  const shared = <T>(of: (p: PlanPreview) => T | null): T | null => {
    const first = presets[0] ? of(presets[0]) : null;
    return presets.length > 1 && presets.every((p) => of(p) === first) ? first : null;
  };
  const customPreview = inPage ? inPage.custom : i.custom;
  const preview = planning ? null : choice.kind === "custom" ? customPreview : (presets.find((p) => sameChoice(p.choice, choice)) ?? null);
  const newContext = contextOk && context !== view.contextLength ? context : null;
  const changed = !!selected && (!sameChoice(selected, view.current) || newContext !== null || placement !== view.placement);
  return {
    view,
    choice,
    selected,
    trunk,
    cache,
    context,
    contextOk,
    newContext,
    presets,
    sharedContext: shared((p) => p.defaultContext),
    sharedBatch: shared((p) => (p.largestBatch !== null && p.largestBatch > 1 ? p.largestBatch : null)),
    planning,
    customPreview,
    plannedInPage: !!inPage,
    preview,
    canApply: !!selected && contextOk && !!preview && !preview.problem && preview.headroomBytes >= 0 && !i.applying && changed,
  };
}
