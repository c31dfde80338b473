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

/** The x range of a chart with fewer than two points, given its one x value (or null). uPlot
 * never asks the x scale's range function with no data, and with one point on a time scale it
 * spans 86400 / ms units: 2.7 years of seconds (the e2e screenshot of an idle Memory window
 * ran from Mar 2027 to Sep 2029). */
export type SparseRange = (only: number | null) => [number, number];

function showSparse(p: uPlot, data: uPlot.AlignedData, sparseX: SparseRange | undefined) {
  if (!sparseX || data[0].length > 1) return;
  const [min, max] = sparseX(data[0][0] ?? null);
  p.setScale("x", { min, max });
}

export function Chart({ options, data, height, label, sparseX }: { options: (U: UPlot) => ChartOptions; data: uPlot.AlignedData; height: number; label: string; sparseX?: SparseRange }) {
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
    showSparse(p, latest.current, sparseX);
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
    showSparse(p, data, sparseX);
  }, [data]);
  return <div class="chart" ref={box} role="img" aria-label={label} />;
}
