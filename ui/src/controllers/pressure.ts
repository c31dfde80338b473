// The memory-pressure guard's controller: while a reply runs, the backend's verdict is read once a
// second; the one-click step-down to a smaller preset is applied after the reply in progress (the
// engine replans only between generations).
// Owns: that polling (only while busy) and the step-down call. The rule itself is the backend's
// (app/src/dashboard/pressure.rs); the banner is components/PressureBanner.tsx.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { PresetName, PressureWarning } from "../generated/ipc";

export const PRESSURE_EVERY_MS = 1000;
/** Asking for tokens after this skips the timeline: the guard wants only the verdict. */
const NO_TOKENS = Number.MAX_SAFE_INTEGER;

export interface Pressure {
  warning: PressureWarning | null;
  /** The step-down's progress or result in words. */
  status: string | null;
  stepDown(name: string): Promise<void>;
}

export function usePressure(busy: boolean): Pressure {
  const [warning, setWarning] = useState<PressureWarning | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  useEffect(() => {
    if (!busy) return;
    const read = () => engine.dashboard(NO_TOKENS).then((d) => setWarning(d.pressure), () => undefined);
    void read();
    const t = setInterval(() => void read(), PRESSURE_EVERY_MS);
    return () => clearInterval(t);
  }, [busy]);
  const stepDown = async (name: string) => {
    setStatus(`Switching to ${name} after this reply…`);
    try {
      const r = await engine.applyMemory({ kind: "preset", name: name as PresetName }, () => undefined);
      setStatus(`Now on ${name}: ${r.model.memory}`);
      setWarning(null);
    } catch (e) {
      setStatus((e as { message: string }).message);
    }
  };
  return { warning, status, stepDown };
}
