// @vitest-environment node
// Components only render (issue 41): the engine client (api/engine.ts) is called from the
// feature controllers in src/controllers/, never from a component. A component may import
// types from it (`import type`), nothing else.
import { readFile, readdir } from "node:fs/promises";
import { expect, test } from "vitest";

const here = new URL("./", import.meta.url);

/** Components not moved behind a controller yet; the list only shrinks. */
const NOT_YET = new Set<string>([
  "App.tsx",
  "DashboardWindow.tsx",
  "Dashboards.tsx",
  "DiagnosticsSettings.tsx",
  "LogViewer.tsx",
  "ModelFolderSettings.tsx",
  "QueueView.tsx",
  "wizard/Jobs.tsx",
  "wizard/Presets.tsx",
  "wizard/ProblemScreen.tsx",
  "wizard/SpeedTest.tsx",
  "wizard/Welcome.tsx",
  "wizard/Wizard.tsx",
  "wizard/stepProps.ts",
]);

/** A value import of the engine client (a type-only import is fine). */
const VALUE_IMPORT = /^import\s+(?!type\b)[^;]*from\s+"(\.\.\/)+api\/engine"/m;

async function sources(): Promise<string[]> {
  const all = await readdir(here, { recursive: true });
  return all.filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f)).map((f) => f.replace(/\\/g, "/"));
}

test("no component calls the engine client; the controllers do", async () => {
  const calling: string[] = [];
  for (const file of await sources()) {
    const text = await readFile(new URL(file, here), "utf8");
    if (VALUE_IMPORT.test(text)) calling.push(file);
  }
  const unexpected = calling.filter((f) => !NOT_YET.has(f));
  expect(unexpected, "these components call api/engine: move the calls into a controller in src/controllers/").toEqual([]);
  const moved = [...NOT_YET].filter((f) => !calling.includes(f));
  expect(moved, "these no longer call api/engine: take them off NOT_YET").toEqual([]);
});
