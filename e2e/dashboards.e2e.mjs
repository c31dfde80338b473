// End-to-end test of the Memory and Disk dashboards and of Settings › Memory in the real window,
// on a synthetic checkpoint with a packed trunk (k3 synth + k3 pack, made by run.sh) so weights
// stream at a small budget: Settings › Memory applies a custom budget without a restart (the
// plan shown changes, the app process stays the same) → a reply streams while the Disk tab shows
// its tokens → the dashboard's per-token bytes add up to the reply's saved stats → the Memory tab
// shows the plan and RSS → switching to `auto` between two replies gives the same greedy reply
// (the budget changes only the speed) → Settings › Performance reopens the model with other thread
// counts in the same process and the reply is the same again → after the drive speed test, layers
// placed by measured cost give the same reply → the Diagnostics report and log
// viewer name what happened and hold no prompt → Stop mid-reply keeps the partial reply. Screenshots: target/e2e-screenshots/dash-*.png; the
// charts' measured redraw rate goes to target/e2e-screenshots/dashboard-rate.json.
//
// Usage: node e2e/dashboards.e2e.mjs /absolute/path/to/k3-desktop   (tauri-driver on 127.0.0.1:4444,
// K3_MODEL_DIR set to the synthetic checkpoint)
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SHOTS, check, journey, messages, retype, screenshot, setGreedyMaxTokens, openSettings } from './harness.mjs';
import { WebDriver, KEYS } from './webdriver.mjs';

const app = process.argv[2];
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';
const shot = (d, name) => screenshot(d, `dash-${name}`);
const PROMPT = 'Say something long';
const TOKENS = 200;
/** Greedy, with the system prompt the new-chats step saves ("Answer in one line."), this
 * synthetic model (seed 7) answers STOP_PROMPT with 1,903 tokens before its end of message
 * (measured: `k3 synth --vocab 768 --seed 7`, then `k3 chat --greedy --max-tokens 4000
 * --system "Answer in one line."`; the longest of 70 prompts tried): ~3 s to press Stop in. */
const STOP_PROMPT = 'mango';

let d = null;
const run = journey(async () => {
  await shot(d, 'failure.png');
  console.log(`window text: ${await d.exec('return document.body.innerText.slice(0, 3000);')}`);
});
const pids = () => execFileSync('pgrep', ['-f', `^${app}( |$)`]).toString().trim();

/** CPU seconds (user + system) used so far by the app and every process under it (WebKit's). */
function cpuSeconds(root) {
  const stats = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).flatMap((pid) => {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      return [{ pid, ppid: f[1], ticks: Number(f[11]) + Number(f[12]) }];
    } catch {
      return [];
    }
  });
  const tree = new Set([String(root)]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats) if (!tree.has(s.pid) && tree.has(s.ppid)) (tree.add(s.pid), (grew = true));
  }
  return stats.filter((s) => tree.has(s.pid)).reduce((a, s) => a + s.ticks, 0) / 100;
}
const key = (k) => d.exec(`window.dispatchEvent(new KeyboardEvent('keydown', { key: ${JSON.stringify(k)}, ctrlKey: true })); return true;`);

async function applyMemory(setChoice) {
  await d.click(await d.find('button[aria-label="App settings"]'));
  await d.until('Settings › Memory', async () => (await d.findAll('[data-testid=memory-settings] [name=memory-preset]')).length > 0, 30000);
  await setChoice();
  const apply = await d.until('an enabled Apply', async () => {
    const b = (await d.findAll('.memory-settings .settings-actions button'))[0];
    return b && (await d.exec('return !arguments[0].disabled;', [{ 'element-6066-11e4-a52e-4f735466cecb': b }])) ? b : null;
  });
  await d.click(apply);
  await d.until('the choice applied', async () => (await d.findAll('[data-testid=memory-applied]')).length === 1, 60000);
  return d.text(await d.find('[data-testid=memory-applied]'));
}

async function reply() {
  await d.click(await d.find('button[aria-label="New chat"]'));
  await d.until('an empty conversation', async () => (await messages(d)).length === 0);
  await setGreedyMaxTokens(d, TOKENS);
  const composer = await d.find('#composer');
  await d.type(composer, PROMPT);
  await d.type(composer, KEYS.enter);
}

const finished = () =>
  d.until('a finished reply', async () => (await d.findAll('.message[data-role=assistant][data-status=complete]')).length === 1, 120000);

d = await WebDriver.start(base, app);
const pid = await (async () => {
  await d.until('the composer', async () => (await d.findAll('#composer')).length === 1, 60000);
  // A fresh data folder opens the setup wizard over the chat (once its status has arrived).
  const wizard = await d.until('the wizard', async () => (await d.findAll('.wizard')).length > 0, 5000).catch(() => false);
  if (wizard) {
    await d.click(await d.find('[data-testid=try-demo]'));
    await d.until('the wizard to close', async () => (await d.findAll('.wizard')).length === 0);
  }
  return pids();
})();
let first = null;
try {
  await run.step('settings › memory: a custom budget applies without a restart and streams the trunk', async () => {
    const bar = await d.exec(`return document.querySelector('.topbar').textContent;`);
    check(!/demo/i.test(bar), `the synthetic checkpoint is not the one open: ${bar}`);
    const applied = await applyMemory(async () => {
      await d.click(await d.find('[name=memory-preset][value=custom]'));
      await retype(d, 'input[aria-label="Trunk budget"]', '300 KB');
      await retype(d, 'input[aria-label="Cache budget"]', '40 KB');
      await d.until('the custom preview', async () => /layers pinned/.test(await d.text(await d.find('[data-testid=custom-preview]'))));
      // Planned in the page by the wasm planner (the module loads under the window's CSP).
      const where = await d.exec(`return document.querySelector('[data-testid=custom-preview]').dataset.planned;`);
      check(where === 'page', `the custom budget was planned by the ${where}, not the page's wasm planner`);
    });
    check(/without a restart/.test(applied) && /0\/13 layers in RAM/.test(applied), `applied: ${applied}`);
    check((await d.text(await d.find('[data-testid=memory-current]'))) === 'custom', 'the choice in force is not custom');
    await shot(d, '01-settings-memory.png');
    check(pids() === pid, 'the app process changed');
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });

  await run.step('disk tab: the per-token timeline follows the reply and adds up to its stats', async () => {
    await reply();
    await key('3');
    await d.until('tokens on the timeline', async () => Number(await d.exec(`return document.querySelector('[data-testid=token-figures]')?.dataset.jobTokens ?? 0;`)) > 2, 60000);
    // Redraws of the timeline over two seconds while the reply runs (the page reads twice a second; the cap is 10).
    const draws = () => d.exec(`return Number(document.querySelector('[data-testid=disk-tab] .chart')?.dataset.draws ?? 0);`);
    const d0 = await draws();
    await new Promise((r) => setTimeout(r, 2000));
    const rate = ((await draws()) - d0) / 2;
    writeFileSync(`${SHOTS}dashboard-rate.json`, JSON.stringify({ timelineRedrawsPerSecond: rate }) + '\n');
    check(rate > 0 && rate <= 10, `the timeline redrew ${rate} times a second while tokens arrived`);
    await shot(d, '02-disk-tab-streaming.png');
    await key('1');
    await finished();
    first = (await messages(d)).find((m) => m.role === 'assistant').text;
    const exact = await d.exec(`return document.querySelector('.message[data-role=assistant] [data-stat=read]').title;`);
    const saved = Number(exact.split(' B')[0].replace(/,/g, ''));
    await key('3');
    await d.until('every token of the reply on the timeline', async () =>
      Number(await d.exec(`return document.querySelector('[data-testid=token-figures]')?.dataset.jobTokens ?? 0;`)) === TOKENS, 10000);
    const shown = Number(await d.exec(`return document.querySelector('[data-testid=token-figures]').dataset.jobBytes;`));
    check(saved > 0 && shown === saved, `the timeline's bytes ${shown} differ from the reply's saved ${saved}`);
    const advice = await d.text(await d.find('[data-testid=token-figures]'));
    check(/s\/token/.test(advice), `token figures: ${advice}`);
    await shot(d, '03-disk-tab.png');
  });

  await run.step('memory tab: RSS, the plan and its breakdown', async () => {
    await key('2');
    const figures = await d.until('memory figures', async () => d.text(await d.find('[data-testid=memory-figures]')));
    check(/RSS \d/.test(figures) && /0\/13 layers/.test(figures), `memory figures: ${figures}`);
    const parts = await d.exec(`return [...document.querySelectorAll('.breakdown-legend li')].map(li => li.dataset.part);`);
    check(['pinned', 'ring', 'experts', 'kv'].every((p) => parts.includes(p)), `breakdown parts: ${parts}`);
    const system = await d.text(await d.find('[data-testid=system-memory]'));
    check(/available \d/.test(system), `system memory: ${system}`);
    await shot(d, '04-memory-tab.png');
    await key('1');
  });

  await run.step('memory tab in its own window', async () => {
    await key('2');
    const main = await d.cmd('GET', '/window');
    await d.click(await d.find('[data-testid=memory-tab] [data-testid=own-window]'));
    const handles = await d.until('a second window', async () => {
      const h = await d.cmd('GET', '/window/handles');
      return h.length === 2 ? h : null;
    }, 20000);
    await d.cmd('POST', '/window', { handle: handles.find((h) => h !== main) });
    const figures = await d.until('the memory figures in the new window', async () => d.text(await d.find('[data-testid=memory-figures]')), 20000);
    check(/RSS \d/.test(figures) && (await d.findAll('#composer')).length === 0, `own window: ${figures}`);
    await shot(d, '04b-memory-window.png');
    await d.cmd('DELETE', '/window');
    await d.cmd('POST', '/window', { handle: main });
    await key('1');
  });

  await run.step('settings › memory: auto between two replies, and the reply is the same', async () => {
    const applied = await applyMemory(async () => d.click(await d.find('[name=memory-preset][value=auto]')));
    check(/13\/13 layers in RAM/.test(applied), `auto did not pin the whole trunk: ${applied}`);
    await d.click(await d.find('button[aria-label="Close settings"]'));
    await reply();
    await finished();
    const second = (await messages(d)).find((m) => m.role === 'assistant').text;
    check(second === first, `the reply at auto differs from the one at the custom budget:\n${second}\n---\n${first}`);
    check(pids() === pid, 'the app process changed');
    await shot(d, '05-after-replan.png');
  });
  await run.step('settings › performance: other thread counts reopen the model in the same process, and the reply is the same', async () => {
    await openSettings(d, 'Performance');
    const inUse = () => d.exec(`return document.querySelector('[data-testid=threads-in-use]')?.textContent ?? '';`);
    await d.until('the threads in use', async () => /compute threads/.test(await inUse()));
    await retype(d, 'input[aria-label="Compute threads"]', 1);
    await retype(d, 'input[aria-label="I/O threads"]', 2);
    await d.click(await d.find('[data-testid=performance-settings] button[type=submit]'));
    await d.until('the model reopened', async () => /^Applied/.test(await d.text(await d.find('[data-testid=performance-settings] [role=status]'))), 120000);
    const now = await inUse();
    check(/1 compute thread · 2 expert reads in flight/.test(now), `in use after Apply: ${now}`);
    await shot(d, '06-settings-performance.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
    await reply();
    await finished();
    const again = (await messages(d)).find((m) => m.role === 'assistant').text;
    check(again === first, `the reply with 1 compute thread and 2 reads differs:\n${again}\n---\n${first}`);
    check(pids() === pid, 'the app process changed');
  });
  await run.step('settings › performance: speculative decoding applies from the next reply, and the reply is the same', async () => {
    const speculation = async (n, saved) => {
      await openSettings(d, 'Performance');
      await d.until('the speculation field', async () => (await d.findAll('input[aria-label="Draft tokens per pass"]')).length === 1);
      await retype(d, 'input[aria-label="Draft tokens per pass"]', n);
      await d.click(await d.find('[data-testid=speculation-setting] button[type=submit]'));
      await d.until('saved', async () => saved.test(await d.text(await d.find('[data-testid=speculation-setting-status]'))));
    };
    await speculation(4, /^Saved: from the next reply, up to 4 drafted tokens/);
    await shot(d, '06b-settings-speculation.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
    await reply();
    await finished();
    const drafted = (await messages(d)).find((m) => m.role === 'assistant').text;
    check(drafted === first, `the reply decoded speculatively differs:\n${drafted}\n---\n${first}`);
    check(pids() === pid, 'the app process changed (speculation needs no reopen)');
    await speculation(0, /^Saved: replies decode one token per pass/);
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });
  await run.step('settings › memory: layers placed by measured cost once the drive is measured, and the reply is the same', async () => {
    const enabled = (sel) => async () => {
      const on = await d.exec('const e = document.querySelector(arguments[0]); return !!e && !e.disabled;', [sel]);
      return on ? d.find(sel) : null;
    };
    await openSettings(d, 'Memory');
    const note = await d.until('why the cost placement is off', async () => d.text(await d.find('[data-testid=cost-placement-note]')), 30000);
    check(/speed test/.test(note) && !(await enabled('[name=memory-placement][value=cost]')()), `before the speed test: ${note}`);
    await d.click(await d.find('button[aria-label="Close settings"]'));
    await openSettings(d, 'Performance');
    await d.click(await d.until('the speed test button', enabled('[data-testid=speed-test]'), 30000));
    await d.until('the drive measured', async () => /MB\/s/.test(await d.text(await d.find('[data-testid=speed-result]'))), 120000);
    await d.click(await d.find('button[aria-label="Close settings"]'));

    await openSettings(d, 'Memory');
    await d.click(await d.until('the cost placement offered', enabled('[name=memory-placement][value=cost]'), 30000));
    await d.until('the presets planned by cost', async () => (await d.findAll('.preset-choices [role=status]')).length === 0, 30000);
    await d.click(await d.find('[name=memory-preset][value=custom]'));
    const custom = await d.exec(`return document.querySelector('[name=memory-preset][value=custom]').checked;`);
    check(custom, 'the custom budget is not selected');
    await retype(d, 'input[aria-label="Trunk budget"]', '300 KB');
    await retype(d, 'input[aria-label="Cache budget"]', '40 KB');
    const preview = await d.until('the custom budget planned by cost in the app', async () => {
      const p = (await d.findAll('[data-testid=custom-preview][data-planned=app]'))[0];
      const text = p ? await d.text(p) : '';
      return /layers pinned/.test(text) ? text : null;
    }, 60000);
    await d.click(await d.until('an enabled Apply', enabled('.memory-settings .settings-actions button'), 30000));
    await d.until('the placement applied', async () => (await d.findAll('[data-testid=memory-applied]')).length === 1, 60000);
    const applied = await d.text(await d.find('[data-testid=memory-applied]'));
    check(/without a restart/.test(applied) && /placed by measured cost/.test(applied), `applied: ${applied} (preview: ${preview})`);
    const current = await d.text(await d.find('.memory-settings > p.muted'));
    check(/In force: custom placed by measured cost/.test(current), `in force: ${current}`);
    await d.exec(`document.querySelector('.memory-settings > p.muted').scrollIntoView(); return 1;`);
    await shot(d, '06c-settings-memory-by-cost.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
    await reply();
    await finished();
    const placed = (await messages(d)).find((m) => m.role === 'assistant').text;
    check(placed === first, `the reply with layers placed by cost differs:\n${placed}\n---\n${first}`);
    check(pids() === pid, 'the app process changed');
  });
  await run.step('settings › new chats: a new conversation starts with the saved defaults', async () => {
    await openSettings(d, 'New chats');
    await d.until('the new-chat form', async () => (await d.findAll('textarea[aria-label="Default system prompt"]')).length === 1);
    await retype(d, 'input[aria-label="Default temperature"]', 0);
    await d.type(await d.find('textarea[aria-label="Default system prompt"]'), 'Answer in one line.');
    await d.click(await d.find('[data-testid=new-chat-settings] button[type=submit]'));
    await d.until('saved', async () => /Saved/.test(await d.text(await d.find('[data-testid=new-chat-settings] [role=status]'))));
    await shot(d, '07-settings-new-chats.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
    const before = (await d.findAll('[data-testid=conversation-list] li')).length;
    await d.click(await d.find('button[aria-label="New chat"]'));
    await d.until('the new conversation in the list', async () => (await d.findAll('[data-testid=conversation-list] li')).length === before + 1);
    await d.until('an empty conversation', async () => (await messages(d)).length === 0);
    await d.click(await d.find('button[aria-label="Conversation settings"]'));
    const read = () => d.exec(`const s = document.querySelector('#system-prompt'), t = document.querySelector('#temperature'); return s && t ? [s.value, t.value] : null;`);
    await d.until('the chat settings', read);
    const got = await d.until('the new chat\'s settings', async () => {
      const v = await read();
      return v && v[0] === 'Answer in one line.' ? v : null;
    }, 5000).catch(async () => read());
    check(got[0] === 'Answer in one line.' && Number(got[1]) === 0, `the new chat starts with ${JSON.stringify(got)}`);
    await d.click(await d.find('button[aria-label="Conversation settings"]'));
    await d.until('the chat settings to close', async () => (await d.findAll('#system-prompt')).length === 0);
  });

  await run.step('settings › diagnostics: the report names the model and variables, never a prompt', async () => {
    await openSettings(d, 'Diagnostics');
    const text = await d.until('the report', async () => {
      const t = await d.exec(`return document.querySelector('textarea[aria-label="Diagnostics report"]')?.value ?? '';`);
      return t.startsWith('k3-desktop') ? t : null;
    });
    check(text.includes(`at ${process.env.K3_MODEL_DIR}`) && text.includes('HF_TOKEN=') && /plan: \d+\/13 layers pinned/.test(text), `report:\n${text}`);
    for (const secret of ['Answer in one line.', PROMPT]) check(!text.includes(secret), `the report holds "${secret}"`);
    const log = await d.until('the log viewer', async () => {
      const t = await d.exec(`return document.querySelector('[role=log]')?.textContent ?? '';`);
      return /performance: compute threads 1, I\/O threads 2/.test(t) ? t : null;
    });
    check(/opened .* in \d+ ms/.test(log) && /reply \d+: Length after \d+ tokens/.test(log), `log:\n${log.slice(-2000)}`);
    for (const secret of ['Answer in one line.', PROMPT]) check(!log.includes(secret), `the log holds "${secret}"`);
    await d.exec(`document.querySelector('[role=log]').scrollTop = 1e9; return 1;`);
    await shot(d, '08-settings-diagnostics.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });

  await run.step('stop: Stop mid-reply ends it as stopped, the partial text kept and saved', async () => {
    // A long reply of this random-weight model (the trained demo of the chat journey ends its
    // replies too soon to stop one): the reply streams, grows, and Stop ends it.
    await d.click(await d.find('button[aria-label="New chat"]'));
    await d.until('an empty conversation', async () => (await messages(d)).length === 0);
    await setGreedyMaxTokens(d, 4000);
    await d.exec(`
      const k = (window.__stop = {});
      document.addEventListener('click', (e) => {
        const b = e.target.closest && e.target.closest('button');
        if (b && b.getAttribute('aria-label') === 'Stop' && k.stop === undefined) k.stop = performance.now();
      }, true);
      new MutationObserver(() => {
        if (k.stop !== undefined && k.stopped === undefined && document.querySelector('.message[data-role=assistant][data-status=stopped]')) k.stopped = performance.now();
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });`);
    const composer = await d.find('#composer');
    await d.type(composer, STOP_PROMPT);
    await d.type(composer, KEYS.enter);
    const streaming = async () => (await messages(d)).find((x) => x.status === 'streaming');
    const firstLength = await d.until('a streaming reply with text', async () => {
      const m = await streaming();
      return m && m.text.length > 0 ? m.text.length : 0;
    }, 30000, 5);
    await d.until('the streaming reply to grow', async () => {
      const m = await streaming();
      return m && m.text.length > firstLength;
    }, 10000, 5);
    await shot(d, 'streaming.png');
    await d.click(await d.find('button[aria-label="Stop"]'));
    await d.until('a stopped reply', async () => (await messages(d)).some((m) => m.role === 'assistant' && m.status === 'stopped'), 10000, 5);
    const marks = await d.exec('return window.__stop;');
    const reply = (await messages(d)).find((m) => m.role === 'assistant');
    check(reply.text.length > 0, 'the partial reply was kept');
    check(reply.id, 'the stopped reply was saved');
    await d.until('the stats line', async () => (await d.findAll('.message[data-role=assistant] .stats')).length === 1);
    const stopLatencyMs = Math.round(marks.stopped - marks.stop);
    writeFileSync(`${SHOTS}stop-timing.json`, `${JSON.stringify({ stopLatencyMs }, null, 2)}\n`);
    console.log(`stop latency: ${stopLatencyMs} ms`);
    await shot(d, 'stopped.png');
  });

  // The dashboards' cost while generating, measured on demand (K3_E2E_MEASURE=1; not in CI):
  // CPU seconds of the app and its web processes over the same window of one long reply, with
  // the chat on screen and with the Disk tab on screen.
  if (process.env.K3_E2E_MEASURE) {
    await run.step('measure: CPU of the app while generating, with and without a dashboard on screen', async () => {
      const seconds = Number(process.env.K3_E2E_MEASURE_SECONDS || 10);
      await d.click(await d.find('button[aria-label="New chat"]'));
      await setGreedyMaxTokens(d, 4000);
      const composer = await d.find('#composer');
      await d.type(composer, PROMPT);
      await d.type(composer, KEYS.enter);
      await d.until('streaming', async () => (await d.findAll('.message[data-status=streaming]')).length === 1, 30000);
      const window = async (tab) => {
        await key(tab);
        await new Promise((r) => setTimeout(r, 1000));
        const c0 = cpuSeconds(pid);
        const t0 = Date.now();
        await new Promise((r) => setTimeout(r, seconds * 1000));
        return (cpuSeconds(pid) - c0) / ((Date.now() - t0) / 1000);
      };
      const result = { chat: await window('1'), disk: await window('3'), memory: await window('2'), chatAgain: await window('1') };
      await d.exec(`document.querySelector('button[aria-label=Stop]')?.click(); return 1;`);
      writeFileSync(`${SHOTS}dashboard-cpu.json`, JSON.stringify({ cpuCoresBusy: result, seconds }, null, 1) + '\n');
      console.log(`CPU cores busy: ${JSON.stringify(result)}`);
    });
  }
} finally {
  await d.quit().catch(() => undefined);
  console.log(run.summary());
}
