// One uPlot chart as a Preact component: created once, fed new data with `setData` (one redraw
// per reading: the dashboards read at most twice a second), resized with its box.
// Owns: the uPlot instance's life (create, setData, setSize, destroy) and the stacked-bar path.
// Must not: format numbers or decide series; the tab that uses it passes options and data.
import { useEffect, useRef } from "preact/hooks";
import type uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export type ChartOptions = Omit<uPlot.Options, "width" | "height">;
type UPlot = typeof uPlot;

/** Bars for uPlot series (the timeline's stacked bars are cumulative series drawn tallest first). */
export const bars = (U: UPlot): uPlot.Series.PathBuilder | undefined => U.paths.bars?.({ size: [0.8, 24] });

// uPlot is loaded with the first chart: it reads the screen (matchMedia) when imported, and the
// chat view does not need it.
// uPlot formats with `navigator.language` when imported; a webview started without a locale
// (LANG unset: WebKitGTK reports "c") makes that throw, so such a page formats as en-US.
function usableLocale() {
  try {
    new Intl.NumberFormat(navigator.language);
  } catch {
    Object.defineProperty(navigator, "language", { value: "en-US", configurable: true });
  }
}
let loading: Promise<UPlot> | null = null;
const loadUPlot = () => (loading ??= (usableLocale(), import("uplot").then((m) => m.default)));

/** The x range a chart with no points shows: uPlot never asks the x scale's range function
 * when there is no data, so an empty time chart would keep whatever span it was made with. */
export type EmptyRange = () => [number, number];

function showEmpty(p: uPlot, data: uPlot.AlignedData, emptyX: EmptyRange | undefined) {
  if (!emptyX || data[0].length > 0) return;
  const [min, max] = emptyX();
  p.setScale("x", { min, max });
}

export function Chart({ options, data, height, label, emptyX }: { options: (U: UPlot) => ChartOptions; data: uPlot.AlignedData; height: number; label: string; emptyX?: EmptyRange }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // The options are fixed for a chart's life: a new series set means a new chart (key it).
  const latest = useRef(data);
  latest.current = data;
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let stop: (() => void) | null = null;
    let cancelled = false;
    void loadUPlot().then((U) => {
      if (cancelled) return;
      stop = create(U, el);
    });
    return () => {
      cancelled = true;
      stop?.();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  const create = (U: UPlot, el: HTMLDivElement) => {
    const opts = options(U);
    // Redraws are counted on the element (data-draws) so the update rate can be measured.
    let draws = 0;
    const counted = { ...opts.hooks, draw: [...(opts.hooks?.draw ?? []), () => void (el.dataset.draws = String(++draws))] };
    const p = new U({ ...opts, hooks: counted, width: Math.max(200, el.clientWidth), height }, latest.current, el);
    plot.current = p;
    showEmpty(p, latest.current, emptyX);
    const resize = new ResizeObserver(() => p.setSize({ width: Math.max(200, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      p.destroy();
      plot.current = null;
    };
  };
  useEffect(() => {
    const p = plot.current;
    if (!p) return;
    p.setData(data);
    showEmpty(p, data, emptyX);
  }, [data]);
  return <div class="chart" ref={box} role="img" aria-label={label} />;
}
