// The setup wizard's place in the main window, the controller: whether the wizard shows (first
// launch, or "Set up Kimi K3…" from the model bar), and the drive's best read rate from its speed
// test for the figures that compare against it (readDriveSpeed, useDriveSpeed: also the dashboard
// windows').
// Owns: those engine calls. Must not: render (components/App.tsx shows the wizard) or let an engine
// error escape (an unreadable status shows no wizard).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { SetupSettings } from "../generated/ipc";
import { driveBestBytesPerS } from "../state/setup";

/** The setup wizard's saved state when it should show (first launch, or "Set up Kimi K3…"), and
 * the drive's best read rate from its speed test (bytes/s), when it ran. */
export function useSetupWindow() {
  const [setup, setSetup] = useState<SetupSettings | null>(null);
  const [driveSpeed, setDriveSpeed] = useState<number | null>(null);
  const learn = (s: SetupSettings) => setDriveSpeed(driveBestBytesPerS(s.speed));
  useEffect(() => {
    void engine
      .setupStatus()
      .then((s) => {
        learn(s.settings);
        if (s.wizard) setSetup(s.settings);
      })
      .catch(() => undefined);
  }, []);
  const reopen = async () => {
    const s = await engine.setupDismiss(false);
    setSetup(s.settings);
  };
  const close = () => {
    // The wizard may have measured the drive meanwhile.
    void readDriveSpeed().then(setDriveSpeed);
    setSetup(null);
  };
  return [setup, close, reopen, driveSpeed] as const;
}

/** The model drive's best measured read rate in bytes/s, from the setup's speed test (null: not
 * measured, or the status unreadable). */
export async function readDriveSpeed(): Promise<number | null> {
  try {
    return driveBestBytesPerS((await engine.setupStatus()).settings.speed);
  } catch {
    return null;
  }
}

/** The same, read once when a window opens. */
export function useDriveSpeed(): number | null {
  const [drive, setDrive] = useState<number | null>(null);
  useEffect(() => void readDriveSpeed().then(setDrive), []);
  return drive;
}

