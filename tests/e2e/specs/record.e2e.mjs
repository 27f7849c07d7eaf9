// Recording from the (fake) default capture device: run.sh points ALSA's default device at a
// FIFO that tests/e2e/fake_mic.py fills in real time with a 440 Hz sine at amplitude 0.5.
import assert from 'node:assert/strict';
import { byTestId, inspectTakeAudio, invoke, openPage, toasts, visibleErrors, waitFor, waitForApp } from './helpers.mjs';

const SINE_RMS = 0.5 / Math.SQRT2;

describe('record', () => {
  let beforeIds;

  before(async () => {
    await waitForApp();
    beforeIds = new Set((await invoke('list_takes', { voiceId: null })).map((t) => t.id));
    await openPage('record', byTestId('record-start'));
  });

  it('lists an input device', async () => {
    const picker = await $(byTestId('record-device'));
    await waitFor(async () => (await picker.getValue()) !== '', {
      timeout: 20000,
      message: async () => `the device picker stayed empty; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    const options = await picker.$$('option').map((o) => o.getText());
    assert.ok(options.length >= 1, 'no device options');
    assert.ok(options.some((o) => o.endsWith('(default)')), `no default device in ${JSON.stringify(options)}`);
    const devices = await invoke('list_input_devices');
    assert.ok(devices.some((d) => d.is_default), `list_input_devices has no default: ${JSON.stringify(devices)}`);
    assert.equal(await picker.getValue(), devices.find((d) => d.is_default).name, 'the default device is not preselected');
  });

  it('records about 2.5 s with a live level meter and saves the take', async () => {
    const peak = await $(byTestId('level-peak'));
    assert.equal(Number(await peak.getAttribute('data-peak')), 0, 'the meter shows a level before recording');

    await $(byTestId('record-start')).click();
    await waitFor(async () => (await $(byTestId('record-status')).getText()) === 'Recording', {
      timeout: 15000,
      message: async () => `recording did not start; errors: ${JSON.stringify(await visibleErrors())}`,
    });
    const startedAt = Date.now();

    // The meter follows the fake device: peak ≈ 0.5 (-6.0 dBFS).
    const levels = [];
    await waitFor(
      async () => {
        const v = Number(await peak.getAttribute('data-peak'));
        levels.push(v);
        return v > 0.3;
      },
      { timeout: 5000, interval: 100, message: () => `the level meter peak stayed at ${JSON.stringify(levels.slice(-5))}` },
    );
    const peakValue = Number(await peak.getAttribute('data-peak'));
    assert.ok(peakValue > 0.4 && peakValue < 0.6, `peak ${peakValue}, expected about 0.5`);
    assert.match(await peak.getText(), /^-[5-7]\.\d dBFS$/, 'the peak readout is not about -6 dBFS');

    await browser.pause(Math.max(0, 2500 - (Date.now() - startedAt)));
    const elapsed = await $(byTestId('record-elapsed')).getText();
    assert.match(elapsed, /^0:0[1-4]\.\d$/, `record-elapsed reads ${elapsed} after 2.5 s`);
    await $(byTestId('record-stop')).click();

    await browser.waitUntil(async () => (await $(byTestId('record-status')).getText()) === 'Ready', {
      timeout: 20000,
      timeoutMsg: 'the recorder did not return to Ready after stop',
    });
    assert.deepEqual(await visibleErrors(), [], 'stopping reported errors');
    assert.ok((await toasts()).some((t) => t.startsWith('Saved take')), `no "Saved take" notice: ${JSON.stringify(await toasts())}`);
    const sessionTake = await $(byTestId('session-take'));
    await sessionTake.waitForDisplayed({ timeout: 5000 });
    assert.equal(await peak.getAttribute('data-peak'), '0.0000', 'the meter did not fall back after stop');
  });

  it('stores the recording as a take holding the fake device signal', async () => {
    const takes = await invoke('list_takes', { voiceId: null });
    const recorded = takes.filter((t) => t.origin === 'recorded' && !beforeIds.has(t.id));
    assert.equal(recorded.length, 1, `expected one new recorded take, got ${JSON.stringify(recorded.map((t) => t.name))}`);
    const take = recorded[0];
    assert.ok(take.duration_secs >= 1.5 && take.duration_secs <= 4, `recorded ${take.duration_secs} s in a 2.5 s recording`);
    assert.ok(take.peak_dbfs > -7 && take.peak_dbfs < -5, `peak ${take.peak_dbfs} dBFS, expected about -6`);

    const a = await inspectTakeAudio(take.id);
    console.log(
      `recorded take ${take.id}: ${take.duration_secs.toFixed(3)} s, ${take.sample_rate} Hz x${take.channels}, ` +
        `peak ${take.peak_dbfs.toFixed(2)} dBFS, decoded RMS ${a.rms.toFixed(4)}, ${a.frequency.toFixed(1)} Hz, ` +
        `${(a.silentFraction * 100).toFixed(1)}% near-zero samples, ${a.byteLength} bytes`,
    );
    assert.equal(a.riff, 'RIFF');
    assert.equal(a.wave, 'WAVE');
    const frames = take.duration_secs * take.sample_rate * take.channels;
    assert.ok(a.byteLength >= 44 + frames * 2 && a.byteLength <= 128 + frames * 4 * 1.01, `${a.byteLength} bytes for ${frames} samples`);
    assert.ok(Math.abs(a.duration - take.duration_secs) < 0.05, `decoded ${a.duration} s, listed ${take.duration_secs} s`);
    assert.ok(Math.abs(a.rms - SINE_RMS) < 0.05, `RMS ${a.rms.toFixed(4)}: not the fed sine (${SINE_RMS.toFixed(4)})`);
    // Continuous and at the right pitch: no dropped frames (a higher pitch) or gaps (silence).
    assert.ok(Math.abs(a.frequency - 440) < 5, `the recording's tone is ${a.frequency.toFixed(1)} Hz, fed 440 Hz`);
    assert.ok(a.silentFraction < 0.02, `${(a.silentFraction * 100).toFixed(1)}% of the recording is silent`);

    // The recorded take shows up in the Library too.
    await openPage('library', byTestId('library-title'));
    const row = await $(`${byTestId('take-row')}[data-take-id="${take.id}"]`);
    await row.waitForDisplayed({ timeout: 10000 });
    assert.match(await row.getText(), /REC/);
  });
});
