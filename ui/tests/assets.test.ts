import { describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import FirstRunPanel from '../src/components/FirstRunPanel.svelte';
import AssetCenter from '../src/components/AssetCenter.svelte';
import Convert from '../src/pages/Convert.svelte';
import { app } from '../src/lib/stores.svelte';
import { assets } from '../src/lib/assets.svelte';
import {
  RateMeter,
  describeTransfer,
  downloadJobsByAsset,
  essentialsStatus,
  groupAssets,
  transferProgress,
} from '../src/lib/assets';
import type { AssetStatus, Job } from '../src/lib/api';
import { assetList, doctorReport, essentialAssets, makeAsset, makeJob, makeModel, makeTake, mockBackend } from './helpers';

const HUBERT_BYTES = 189507909;
const RMVPE_BYTES = 181184272;

function downloadJob(id: number, asset: string, over: Partial<Job> = {}): Job {
  return makeJob({ id, kind: 'download', params: { asset }, ...over });
}

/** Sends a job notification as the backend does. */
function notify(job: Job) {
  app.handleEvent({ type: 'job', job });
}

describe('download center logic', () => {
  it('sums what the missing essentials still need and names the last failure', () => {
    const list = essentialAssets(true, false);
    const jobs = downloadJobsByAsset([
      downloadJob(1, 'rmvpe', { state: 'failed', error: 'first try' }),
      downloadJob(3, 'rmvpe', { state: 'failed', error: 'rmvpe: http://127.0.0.1:1/rmvpe.pt: 404 Not Found' }),
      downloadJob(2, 'hubert', { state: 'succeeded' }),
    ]);
    const status = essentialsStatus(list, jobs);
    expect(status.missing.map((a) => a.name)).toEqual(['rmvpe']);
    expect(status.bytesNeeded).toBe(RMVPE_BYTES);
    expect(status.active).toEqual([]);
    expect(status.errors).toEqual(['rmvpe: http://127.0.0.1:1/rmvpe.pt: 404 Not Found']);
  });

  it('groups assets by the job kind that needs them, configs with their model', () => {
    const list: AssetStatus[] = [
      ...essentialAssets(true, true),
      makeAsset({ name: 'bs-roformer', path: 'separation/bs.ckpt', needed_for: ['isolate'], essential: false }),
      makeAsset({ name: 'bs-roformer-config', path: 'separation/bs.yaml', needed_for: ['bs-roformer'], essential: false }),
      makeAsset({ name: 'f0G40k', path: 'pretrained_v2/f0G40k.pth', needed_for: ['train (v2 40k, with pitch)'], essential: false }),
    ];
    expect(groupAssets(list).map((g) => [g.group, g.assets.map((a) => a.name)])).toEqual([
      ['convert', ['hubert', 'rmvpe']],
      ['isolate', ['bs-roformer', 'bs-roformer-config']],
      ['train', ['f0G40k']],
    ]);
  });

  it('measures the rate over recent samples and starts over when the bytes go back', () => {
    const meter = new RateMeter(5000);
    meter.add(0, 0);
    expect(meter.bytesPerSec).toBeNull();
    meter.add(1000, 2_000_000);
    meter.add(2000, 4_000_000);
    expect(meter.bytesPerSec).toBe(2_000_000);
    meter.add(3000, 1000);
    expect(meter.bytesPerSec).toBeNull();
    const p = transferProgress(100e6, 371e6, 2e6);
    expect(p.secsLeft).toBeCloseTo(135.5);
    expect(describeTransfer(p)).toBe('100 MB of 371 MB · 2.0 MB/s · 2 min 16 s left');
  });
});

describe('first-run panel', () => {
  it('gets both essentials with one button, shows bytes, rate and time left, then goes away', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(0);
    let verified = false;
    const be = mockBackend({
      list_assets: () => assetList(essentialAssets(verified, verified)),
      download_assets: ({ names }) => names.map((n: string, i: number) => downloadJob(10 + i, n)),
    });
    render(FirstRunPanel);
    await assets.start();
    const button = await screen.findByTestId('first-run-get');
    expect(button).toHaveTextContent('Get the essentials: HuBERT + RMVPE, about 371 MB');
    await fireEvent.click(button);
    await waitFor(() => expect(be.argsOf('download_assets')).toEqual([{ names: ['hubert', 'rmvpe'] }]));
    expect(await screen.findByTestId('first-run-cancel')).toBeInTheDocument();

    notify(downloadJob(10, 'hubert', { state: 'running', progress: 0 }));
    notify(downloadJob(11, 'rmvpe', { state: 'running', progress: 0 }));
    vi.setSystemTime(2000);
    notify(downloadJob(10, 'hubert', { state: 'running', progress: 10e6 / HUBERT_BYTES }));
    notify(downloadJob(11, 'rmvpe', { state: 'running', progress: 6e6 / RMVPE_BYTES }));
    // 16 MB in 2 s: 8 MB/s, 355 MB to go: 44.4 s, shown as 45.
    await waitFor(() =>
      expect(screen.getByTestId('first-run-transfer')).toHaveTextContent('16 MB of 371 MB · 8.0 MB/s · 45 s left'),
    );

    verified = true;
    notify(downloadJob(10, 'hubert', { state: 'succeeded', progress: 1 }));
    notify(downloadJob(11, 'rmvpe', { state: 'succeeded', progress: 1 }));
    await waitFor(() => expect(screen.queryByTestId('first-run')).toBeNull());
  });

  it('goes away when the downloads end before the command that queued them answers', async () => {
    let verified = false;
    mockBackend({
      list_assets: () => assetList(essentialAssets(verified, verified)),
      download_assets: ({ names }) => {
        const queued: Job[] = names.map((n: string, i: number) => downloadJob(30 + i, n));
        verified = true;
        for (const job of queued) notify({ ...job, state: 'succeeded', progress: 1 });
        return queued;
      },
    });
    render(FirstRunPanel);
    await assets.start();
    await fireEvent.click(await screen.findByTestId('first-run-get'));
    await waitFor(() => expect(screen.queryByTestId('first-run')).toBeNull());
    expect(app.jobs.map((j) => [j.id, j.state])).toEqual([
      [30, 'succeeded'],
      [31, 'succeeded'],
    ]);
  });

  it('cancels, and says why a download failed', async () => {
    const be = mockBackend({
      list_assets: () => assetList(essentialAssets(true, false)),
      cancel_job: ({ id }) => downloadJob(id, 'rmvpe', { state: 'cancelled' }),
    });
    app.jobs = [downloadJob(5, 'rmvpe', { state: 'running', progress: 0.5 })];
    render(FirstRunPanel);
    await assets.start();
    await fireEvent.click(await screen.findByTestId('first-run-cancel'));
    await waitFor(() => expect(be.argsOf('cancel_job')).toEqual([{ id: 5 }]));
    // Only what is missing is named and offered.
    expect(await screen.findByTestId('first-run-get')).toHaveTextContent('Get the essentials: RMVPE, about 181 MB');
    expect(screen.getByTestId('first-run')).toHaveTextContent('Conversion needs RMVPE It is not in the models folder yet');
    expect(screen.getByTestId('first-run')).not.toHaveTextContent('HuBERT');

    notify(downloadJob(6, 'rmvpe', { state: 'failed', error: 'rmvpe: every source failed: http://127.0.0.1:9/e2e/rmvpe.pt: 404' }));
    expect(await screen.findByTestId('first-run-error')).toHaveTextContent('404');
    await fireEvent.click(screen.getByTestId('first-run-dismiss'));
    expect(screen.queryByTestId('first-run')).toBeNull();
  });

  it('keeps the newest list when two refreshes answer out of order', async () => {
    let release: (() => void) | null = null;
    let calls = 0;
    mockBackend({
      list_assets: () => {
        calls += 1;
        if (calls === 1) return assetList(essentialAssets(false, false));
        // The refresh after HuBERT's download answers last, with RMVPE not there yet.
        if (calls === 2) return new Promise((resolve) => (release = () => resolve(assetList(essentialAssets(true, false)))));
        return assetList(essentialAssets(true, true));
      },
    });
    render(FirstRunPanel);
    await assets.start();
    expect(await screen.findByTestId('first-run')).toBeInTheDocument();
    notify(downloadJob(20, 'hubert', { state: 'succeeded', progress: 1 }));
    notify(downloadJob(21, 'rmvpe', { state: 'succeeded', progress: 1 }));
    await waitFor(() => expect(calls).toBe(3));
    await waitFor(() => expect(release).not.toBeNull());
    await waitFor(() => expect(screen.queryByTestId('first-run')).toBeNull());
    release!();
    // Let the stale answer arrive; the panel stays gone.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(assets.essentials.missing).toEqual([]);
    expect(screen.queryByTestId('first-run')).toBeNull();
  });

  it('is not shown when the essentials are there', async () => {
    mockBackend({ list_assets: () => assetList(essentialAssets(true, true)) });
    render(FirstRunPanel);
    await assets.start();
    expect(assets.list).not.toBeNull();
    expect(screen.queryByTestId('first-run')).toBeNull();
  });
});

describe('Models page download center', () => {
  const corrupt = makeAsset({ state: 'corrupt', problem: 'truncated: 100 of 181184272 bytes' });

  it('lists each asset with its state, and verifies, removes and downloads', async () => {
    let rmvpe: AssetStatus = makeAsset({ state: 'present' });
    const be = mockBackend({
      list_assets: () => assetList([essentialAssets(true, true)[0], rmvpe]),
      get_doctor_report: () =>
        doctorReport([], [{ kind: 'convert', ready: true, lacks: [], would_use: [] }, { kind: 'train', ready: true, lacks: [], would_use: ['pretrained bases'] }]),
      verify_assets: () => [(rmvpe = corrupt)],
      remove_asset: () => (rmvpe = makeAsset({ state: 'missing' })),
      download_assets: () => [downloadJob(20, 'rmvpe', { state: 'queued' })],
    });
    render(AssetCenter);
    const row = async () => (await screen.findAllByTestId('asset-row')).find((r) => r.dataset.name === 'rmvpe')!;
    expect((await row()).dataset.state).toBe('present');
    expect(screen.getByTestId('job-readiness')).toHaveTextContent('would use pretrained bases');

    await fireEvent.click(within(await row()).getByTestId('asset-verify'));
    await waitFor(async () => expect((await row()).dataset.state).toBe('corrupt'));
    expect(within(await row()).getByTestId('asset-detail')).toHaveTextContent('truncated: 100 of 181184272 bytes');
    expect(app.notices.map((n) => n.text)).toContain('rmvpe is corrupt: truncated: 100 of 181184272 bytes');

    await fireEvent.click(within(await row()).getByTestId('asset-remove'));
    expect(be.argsOf('remove_asset')).toEqual([]);
    await fireEvent.click(within(await row()).getByTestId('asset-remove-confirm'));
    await waitFor(async () => expect((await row()).dataset.state).toBe('missing'));
    expect(be.argsOf('remove_asset')).toEqual([{ name: 'rmvpe' }]);

    await fireEvent.click(within(await row()).getByTestId('asset-download'));
    await waitFor(() => expect(be.argsOf('download_assets')).toEqual([{ names: ['rmvpe'] }]));
    expect(await within(await row()).findByTestId('asset-cancel')).toBeInTheDocument();
  });
});

describe('a job that needs a missing asset', () => {
  it('names RMVPE on the Convert page and offers its download', async () => {
    app.takes = [makeTake({ id: 7, name: 'Verse' })];
    const be = mockBackend({
      list_models: () => [makeModel()],
      list_conversions: () => [],
      list_assets: () => assetList(essentialAssets(false, false)),
      download_assets: ({ names }) => names.map((n: string) => downloadJob(30, n, { state: 'running', progress: 0.25 })),
    });
    render(Convert);
    // RMVPE's offer is in the parameters, shown once the defaults are loaded.
    await waitFor(() => expect(screen.getAllByTestId('missing-asset')).toHaveLength(2));
    const offers = screen.getAllByTestId('missing-asset');
    expect(offers.map((o) => o.dataset.name).sort()).toEqual(['hubert', 'rmvpe']);
    const rmvpe = offers.find((o) => o.dataset.name === 'rmvpe')!;
    expect(rmvpe).toHaveTextContent('The RMVPE pitch method needs RMVPE (rmvpe.pt)');
    await fireEvent.click(within(rmvpe).getByTestId('missing-asset-download'));
    await waitFor(() => expect(be.argsOf('download_assets')).toEqual([{ names: ['rmvpe'] }]));
    expect(await screen.findByTestId('missing-asset-progress')).toHaveTextContent('Downloading: 45 MB of 181 MB');
  });
});
