// WebdriverIO configuration for Timbre Studio's end-to-end GUI tests.
//
// WebdriverIO talks to tauri-driver (port 4444), which starts the app binary and proxies to
// WebKitWebDriver, so every spec file drives the real app in the real WebKitGTK webview.
// Run through tests/e2e/run.sh (which sets up Xvfb, D-Bus, a fresh library and a fake
// microphone); running this file directly needs all of that in place.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const application = path.resolve(process.env.E2E_APP ?? path.join(root, 'target', 'debug', 'timbre-studio'));
const logDir = path.resolve(process.env.E2E_LOG_DIR ?? path.join(here, 'logs'));
const resultsFile = process.env.E2E_RESULTS ?? path.join(logDir, 'results.jsonl');
const HOST = '127.0.0.1';
const PORT = 4444;

/** Specs whose app starts on a models folder of its own, empty at first (the first run). */
const FRESH_MODELS_SPECS = ['first-run.e2e.mjs'];
/** Specs whose app reaches the private PulseAudio loop (run.sh, pulse-loop.sh) instead of the fake microphone. */
const PULSE_SPECS = ['live.e2e.mjs', 'live-measure.e2e.mjs'];

let tauriDriver;
let driverExited = false;

function findTauriDriver() {
  if (process.env.TAURI_DRIVER) return process.env.TAURI_DRIVER;
  const which = spawnSync('sh', ['-c', 'command -v tauri-driver'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  return path.join(os.homedir(), '.cargo', 'bin', 'tauri-driver');
}

/** KEY=VALUE lines that route a process to run.sh's PulseAudio loop (pulse-loop.sh env). */
function pulseEnv() {
  const dir = process.env.E2E_PULSE_DIR;
  if (!dir) throw new Error('E2E_PULSE_DIR is set by run.sh (the PulseAudio loop)');
  const out = spawnSync(path.join(here, 'pulse-loop.sh'), ['env', dir], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`pulse-loop.sh env failed: ${out.stderr}`);
  return out.stdout.split('\n').filter((line) => line.includes('='));
}

function portOpen(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: HOST, port }, () => {
      sock.destroy();
      resolve(true);
    });
    sock.on('error', () => resolve(false));
  });
}

async function waitForPort(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (driverExited) throw new Error('tauri-driver exited before it listened (see tauri-driver.log)');
    if (await portOpen(port)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`tauri-driver did not listen on ${HOST}:${port} within ${timeoutMs} ms`);
}

/** One JSON line per finished test or failed hook, for run.sh's closing tally. */
function record(entry) {
  try {
    fs.appendFileSync(resultsFile, `${JSON.stringify(entry)}\n`);
  } catch {
    /* the tally is a convenience; the exit code is what counts */
  }
}

export const config = {
  runner: 'local',
  hostname: HOST,
  port: PORT,
  specs: [path.join(here, 'specs', '*.e2e.mjs')],
  maxInstances: 1,
  capabilities: [
    {
      maxInstances: 1,
      // No browserName: tauri-driver rejects it ("Failed to match capabilities").
      'tauri:options': { application },
    },
  ],
  // run.sh already runs everything under xvfb-run.
  autoXvfb: false,
  logLevel: 'warn',
  outputDir: logDir,
  bail: 0,
  waitforTimeout: 15000,
  waitforInterval: 100,
  connectionRetryTimeout: 120000,
  connectionRetryCount: 2,
  framework: 'mocha',
  reporters: ['spec'],
  // A per-test limit above every wait's own ceiling (waits on backend work use the generous
  // BACKEND_WORK_TIMEOUT of specs/helpers.mjs), so only a hang reaches it; run.sh's E2E_TIMEOUT
  // bounds the run. A fixed 60 s failed the long tests on a loaded machine. (wdio's mocha
  // wrapper turns `timeout: 0` into an immediate "Timeout after -3ms", so it is not "none".)
  mochaOpts: { ui: 'bdd', timeout: 20 * 60 * 1000 },

  async onPrepare() {
    fs.mkdirSync(logDir, { recursive: true });
    if (await portOpen(PORT)) {
      throw new Error(`port ${PORT} is already in use (a tauri-driver left from another run?)`);
    }
    if (!fs.existsSync(application)) {
      throw new Error(`the app binary is missing: ${application} (build it with \`make build-test\` or \`make app\`)`);
    }
    const bin = findTauriDriver();
    const log = fs.openSync(path.join(logDir, 'tauri-driver.log'), 'a');
    const nativeDriver = process.env.E2E_NATIVE_DRIVER ?? '/usr/bin/WebKitWebDriver';
    const args = ['--port', String(PORT)];
    if (fs.existsSync(nativeDriver)) args.push('--native-driver', nativeDriver);
    tauriDriver = spawn(bin, args, { stdio: ['ignore', log, log] });
    tauriDriver.on('error', (err) => {
      driverExited = true;
      console.error(`cannot start tauri-driver (${bin}): ${err.message}`);
    });
    tauriDriver.on('exit', () => {
      driverExited = true;
    });
    // Also when the launcher dies without onComplete.
    process.on('exit', () => {
      if (!driverExited) tauriDriver.kill('SIGTERM');
    });
    await waitForPort(PORT, 20000);
  },

  // The app's environment is tauri-driver's, fixed at onPrepare: a spec that needs another
  // models folder, or the PulseAudio loop, starts the app through app.sh, which takes them as arguments.
  beforeSession(_config, capabilities, specs) {
    const names = specs.map((s) => path.basename(s.startsWith('file:') ? fileURLToPath(s) : s));
    const fresh = names.some((n) => FRESH_MODELS_SPECS.includes(n));
    const pulse = names.some((n) => PULSE_SPECS.includes(n));
    if (!fresh && !pulse) return;
    const tmp = process.env.E2E_TMP;
    if (!tmp || !process.env.E2E_APP_LAUNCHER) throw new Error('E2E_TMP and E2E_APP_LAUNCHER are set by run.sh');
    const args = [];
    if (fresh) args.push(`--models-dir=${path.join(tmp, 'fresh-models')}`);
    if (pulse) args.push(...pulseEnv().map((pair) => `--env=${pair}`));
    capabilities['tauri:options'] = { application: process.env.E2E_APP_LAUNCHER, args };
  },

  onComplete() {
    if (tauriDriver && !driverExited) tauriDriver.kill('SIGTERM');
  },

  async afterTest(test, _context, { passed, skipped, duration, error }) {
    // A test that called this.skip() (what it needs is not in the app): neither passed nor failed.
    if (skipped) {
      record({ spec: path.basename(test.file ?? ''), title: test.fullTitle ?? `${test.parent} ${test.title}`, skipped: true });
      return;
    }
    if (!passed) {
      const name = `${test.parent ?? ''} ${test.title}`.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120);
      // Bounded: a hung page must not also hang the hook (see specs/helpers.mjs screenshot()).
      const { screenshot } = await import('./specs/helpers.mjs');
      await Promise.race([
        screenshot(path.join(logDir, `FAILED-${name}.png`)).catch(() => {}),
        new Promise((r) => setTimeout(r, 10000)),
      ]);
    }
    record({
      spec: path.basename(test.file ?? ''),
      title: test.fullTitle ?? `${test.parent} ${test.title}`,
      passed,
      duration,
      error: error ? String(error.message ?? error).slice(0, 500) : undefined,
    });
  },

  afterHook(test, _context, { passed, error }) {
    // A failing before/after hook skips tests without an afterTest: count it as a failure.
    if (!passed && error) {
      record({ spec: path.basename(test.file ?? ''), title: `hook: ${test.title}`, passed: false, error: String(error.message ?? error).slice(0, 500) });
    }
  },
};
