// What the wizard shell hands each step screen (StepProps, JobsProps for the job screens) and
// useMachine, the hardware and drive screens' shared reading of this machine.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../../api/engine";
import type { MachineView, ModelInfo, SetupSettings } from "../../generated/ipc";

export type StepChoice = Parameters<typeof engine.setupChoose>[0];

export interface StepProps {
  settings: SetupSettings;
  next(): Promise<void>;
  choose(c: StepChoice): Promise<void>;
  guard<T>(f: () => Promise<T>): Promise<T | undefined>;
  setSettings(s: SetupSettings): void;
}

export interface JobsProps extends StepProps {
  onReady(m: ModelInfo): void;
  /** The download was cancelled (partials kept): the words to show on the screen it returns to. */
  onCancelled(note: string): void;
}

/** This machine as the Rust side examined it (with `store`'s drive), and a function to examine it again. */
export function useMachine(store: string | null, guard: StepProps["guard"]) {
  const [view, setView] = useState<MachineView | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    void guard(() => engine.setupExamine(store)).then((v) => live && v && setView(v));
    return () => {
      live = false;
    };
  }, [store, tick]);
  return [view, () => setTick((t) => t + 1)] as const;
}
