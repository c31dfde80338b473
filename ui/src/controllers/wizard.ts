// The guided first-time setup, the controller: Next / choose / close forwarded to the Rust side
// (app/src/setup owns the steps, what blocks each and the saved state), and every call a step's
// screen makes (adopt, examine, speed test, forecast, run the jobs, pause, the access token), each
// guarded so that a failure shows in the wizard as its error and the call gives `undefined`.
// Owns: the wizard's engine calls and the state between them. Must not: render (the screens in
// components/wizard/ draw) or let an engine error escape.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { Blocker, IpcError, MachineView, SetupSettings } from "../generated/ipc";

export type StepChoice = Parameters<typeof engine.setupChoose>[0];

type Guard = <T>(f: () => Promise<T>) => Promise<T | undefined>;

/** The engine calls of the step screens, each through the wizard's guard. */
function setupCalls(guard: Guard) {
  const g =
    <A extends unknown[], T>(f: (...a: A) => Promise<T>) =>
    (...a: A) =>
      guard(() => f(...a));
  return {
    adopt: g(engine.setupAdopt),
    examine: g(engine.setupExamine),
    speedTest: g(engine.setupSpeedTest),
    forecast: g(engine.setupForecast),
    run: g(engine.setupRun),
    status: g(engine.setupStatus),
    pause: g(engine.setupPause),
    token: g(engine.setupToken),
  };
}

export type SetupCalls = ReturnType<typeof setupCalls>;

/** What the wizard shell hands each step screen. */
export interface StepProps {
  settings: SetupSettings;
  next(): Promise<void>;
  choose(c: StepChoice): Promise<void>;
  calls: SetupCalls;
  setSettings(s: SetupSettings): void;
}

export function useWizard(initial: SetupSettings, onClose: () => void) {
  const [settings, setSettings] = useState(initial);
  const [blockers, setBlockers] = useState<Blocker[]>([]);
  const [error, setError] = useState<IpcError | null>(null);
  const [note, setNote] = useState<string | null>(null);

  const guard: Guard = async (f) => {
    setError(null);
    try {
      return await f();
    } catch (e) {
      setError(engine.toIpcError(e));
      return undefined;
    }
  };
  const next = async () => {
    setNote(null);
    const r = await guard(engine.setupNext);
    if (r) {
      setSettings(r.settings);
      setBlockers(r.blockers);
    }
  };
  const choose = async (choice: StepChoice) => {
    const s = await guard(() => engine.setupChoose(choice));
    if (s) {
      setSettings(s);
      setBlockers([]);
    }
  };
  const close = async () => {
    await guard(() => engine.setupPause());
    await guard(() => engine.setupDismiss(true));
    onClose();
  };
  const step: StepProps = { settings, next, choose, calls: setupCalls(guard), setSettings };
  return {
    settings,
    blockers,
    error,
    /** Words for the screen a cancelled download returned to. */
    note,
    setNote,
    step,
    close,
    /** Confirms a blocker the user accepts, then tries Next again. */
    confirm: (key: string) => void choose({ confirm: key }).then(next),
  };
}

/** This machine as the Rust side examined it (with `store`'s drive), and a function to examine it
 * again: the hardware and drive screens' shared reading. */
export function useMachine(store: string | null, calls: SetupCalls) {
  const [view, setView] = useState<MachineView | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    void calls.examine(store).then((v) => live && v && setView(v));
    return () => {
      live = false;
    };
  }, [store, tick]);
  return [view, () => setTick((t) => t + 1)] as const;
}
