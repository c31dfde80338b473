// A minimal W3C WebDriver client over Node's fetch (no dependencies): just the commands the
// end-to-end test uses. Spec: https://www.w3.org/TR/webdriver2/
const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

export class WebDriver {
  constructor(base, sessionId) {
    this.base = base;
    this.sessionId = sessionId;
  }

  static async call(base, method, path, body) {
    const res = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok || (json.value && json.value.error)) {
      throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.value)}`);
    }
    return json.value;
  }

  /** Starts the app at `application` (absolute path) through tauri-driver. */
  static async start(base, application) {
    const caps = { capabilities: { alwaysMatch: { 'tauri:options': { application } } } };
    const value = await WebDriver.call(base, 'POST', '/session', caps);
    return new WebDriver(base, value.sessionId);
  }

  cmd(method, path, body) {
    return WebDriver.call(this.base, method, `/session/${this.sessionId}${path}`, body);
  }

  async find(css) {
    const value = await this.cmd('POST', '/element', { using: 'css selector', value: css });
    return value[ELEMENT];
  }

  async findAll(css) {
    const value = await this.cmd('POST', '/elements', { using: 'css selector', value: css });
    return value.map((v) => v[ELEMENT]);
  }

  click(id) {
    return this.cmd('POST', `/element/${id}/click`, {});
  }

  clear(id) {
    return this.cmd('POST', `/element/${id}/clear`, {});
  }

  type(id, text) {
    return this.cmd('POST', `/element/${id}/value`, { text });
  }

  text(id) {
    return this.cmd('GET', `/element/${id}/text`);
  }

  /** Runs `script` (a function body) in the page; `args` become `arguments`. */
  exec(script, args = []) {
    return this.cmd('POST', '/execute/sync', { script, args });
  }

  async screenshot() {
    return Buffer.from(await this.cmd('GET', '/screenshot'), 'base64');
  }

  quit() {
    return this.cmd('DELETE', '');
  }

  /** Polls `probe` until it returns a truthy value; fails after `timeoutMs`. */
  async until(what, probe, timeoutMs = 20000, everyMs = 25) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      let value;
      try {
        value = await probe();
      } catch {
        value = undefined;
      }
      if (value) return value;
      if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}

export const KEYS = { enter: '\uE007', escape: '\uE00C', control: '\uE009', release: '\uE000', end: '\uE010', backspace: '\uE003' };
