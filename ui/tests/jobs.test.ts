import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Jobs from '../src/pages/Jobs.svelte';
import { app } from '../src/lib/stores.svelte';
import { makeJob, mockBackend } from './helpers';

const jobs = [
  makeJob({ id: 1, state: 'succeeded', progress: 1, message: '3 imported', finished_at: '2026-11-20T10:00:05Z' }),
  makeJob({ id: 2, state: 'failed', progress: 0.5, error: 'disk full', error_kind: 'disk_full', attempts: 3 }),
  makeJob({ id: 3, state: 'running', progress: 0.42, message: 'Importing 5/12', started_at: '2026-11-20T10:01:00Z' }),
];

const snapshot = {
  cpu_percent: 12.5,
  ram_used_bytes: 4 * 1024 ** 3,
  ram_total_bytes: 16 * 1024 ** 3,
  gpus: [{ name: 'H100', memory_used_bytes: 1024 ** 3, memory_total_bytes: 80 * 1024 ** 3, utilization_percent: 3, temperature_c: 40 }],
};

const emptyCache = { budget_bytes: 4096 * 1024 ** 2, used_bytes: 0, hits: 0, misses: 0, evictions: 0, models: [] };

function backend(extra: Record<string, (a: any) => unknown> = {}) {
  return mockBackend({
    list_jobs: () => jobs,
    get_resource_snapshot: () => snapshot,
    get_model_cache: () => emptyCache,
    ...extra,
  });
}

describe('Jobs page', () => {
  it('lists jobs newest first with their states', async () => {
    backend();
    render(Jobs);
    const rows = await screen.findAllByTestId('job-row');
    expect(rows.map((r) => r.getAttribute('data-job-id'))).toEqual(['3', '2', '1']);
    expect(rows.map((r) => r.getAttribute('data-job-state'))).toEqual(['running', 'failed', 'succeeded']);
    expect(within(rows[0]).getByTestId('job-state')).toHaveTextContent('running');
    expect(rows[0]).toHaveTextContent('42%');
    expect(rows[0]).toHaveTextContent('Importing 5/12');
    // A screen reader hears the bar as a named progressbar at 42 %.
    const bar = within(rows[0]).getByRole('progressbar');
    expect(bar).toHaveAccessibleName();
    expect(bar).toHaveAttribute('aria-valuenow', '42');
    expect(bar).toHaveAttribute('aria-valuetext', '42%');
    expect(within(rows[1]).getByTestId('job-error')).toHaveTextContent('disk full');
    // The error's kind says what to do about it.
    expect(within(rows[1]).getByTestId('job-error-hint')).toHaveTextContent('The disk is full: free some space');
    expect(within(rows[0]).queryByTestId('job-error-hint')).toBeNull();
    // Cancel only for queued/running, Retry only for failed/cancelled/interrupted.
    expect(within(rows[0]).queryByTestId('job-cancel')).not.toBeNull();
    expect(within(rows[0]).queryByTestId('job-retry')).toBeNull();
    expect(within(rows[1]).queryByTestId('job-retry')).not.toBeNull();
    expect(within(rows[1]).queryByTestId('job-cancel')).toBeNull();
    expect(within(rows[2]).queryByTestId('job-retry')).toBeNull();
    expect(within(rows[2]).queryByTestId('job-cancel')).toBeNull();
  });

  it('tells of jobs waiting after a crash and resumes them through resume_job', async () => {
    const waiting = makeJob({ id: 4, state: 'queued', recovered: true, crashes: 1 });
    const be = mockBackend({
      list_jobs: () => [...jobs, waiting],
      get_resource_snapshot: () => snapshot,
      get_model_cache: () => emptyCache,
      resume_job: (a) => ({ ...waiting, id: a.id, recovered: false }),
    });
    render(Jobs);
    const banner = await screen.findByTestId('jobs-waiting');
    expect(banner).toHaveTextContent('1 job was interrupted');
    expect(banner).toHaveTextContent('#4');
    await fireEvent.click(within(banner).getByTestId('jobs-resume'));
    await waitFor(() => expect(be.argsOf('resume_job')).toEqual([{ id: 4 }]));
  });

  it('retries a failed job through retry_job', async () => {
    // The live stream runs ahead of the reply: the job is already running again when the
    // (older) "queued" reply arrives, which must not win.
    const be = backend({
      retry_job: (a) => {
        app.handleEvent({ type: 'job', job: { ...jobs[1], state: 'running', error: null } });
        return { ...jobs[1], id: a.id, state: 'queued', error: null };
      },
    });
    render(Jobs);
    const failed = (await screen.findAllByTestId('job-row')).find((r) => r.dataset.jobId === '2')!;
    await fireEvent.click(within(failed).getByTestId('job-retry'));
    await waitFor(() => expect(be.argsOf('retry_job')).toEqual([{ id: 2 }]));
    await waitFor(() =>
      expect(screen.getAllByTestId('job-row').find((r) => r.dataset.jobId === '2')).toHaveAttribute(
        'data-job-state',
        'running',
      ),
    );
  });

  it('cancels a running job through cancel_job', async () => {
    const be = backend({ cancel_job: (a) => ({ ...jobs[2], id: a.id, state: 'cancelled' }) });
    render(Jobs);
    const running = (await screen.findAllByTestId('job-row'))[0];
    await fireEvent.click(within(running).getByTestId('job-cancel'));
    await waitFor(() => expect(be.argsOf('cancel_job')).toEqual([{ id: 3 }]));
  });

  it('updates live from job events', async () => {
    backend();
    render(Jobs);
    await screen.findAllByTestId('job-row');
    app.handleEvent({ type: 'job', job: { ...jobs[2], state: 'succeeded', progress: 1 } });
    app.handleEvent({ type: 'job', job: makeJob({ id: 4, state: 'queued' }) });
    await waitFor(() => {
      const rows = screen.getAllByTestId('job-row');
      expect(rows.map((r) => r.dataset.jobId)).toEqual(['4', '3', '2', '1']);
      expect(rows[1]).toHaveAttribute('data-job-state', 'succeeded');
    });
  });

  it('expands a job to show per-file import results', async () => {
    const be = backend({
      list_job_events: () => [
        { id: 1, job_id: 2, at: '2026-11-20T10:00:01Z', level: 'info', kind: 'file', data: { path: '/a/one.wav', ok: true, take_id: 11 } },
        { id: 2, job_id: 2, at: '2026-11-20T10:00:02Z', level: 'warn', kind: 'file', data: { path: '/a/two.wav', ok: true, duplicate: true, take_id: 5 } },
        { id: 3, job_id: 2, at: '2026-11-20T10:00:03Z', level: 'error', kind: 'file', data: { path: '/a/three.mp3', ok: false, error: 'unsupported codec' } },
      ],
    });
    render(Jobs);
    const failed = (await screen.findAllByTestId('job-row')).find((r) => r.dataset.jobId === '2')!;
    await fireEvent.click(within(failed).getByTestId('job-expand'));
    const events = await within(failed).findAllByTestId('job-event');
    expect(be.argsOf('list_job_events')[0]).toEqual({ id: 2 });
    expect(events.map((e) => e.dataset.status)).toEqual(['ok', 'duplicate', 'error']);
    expect(events[0]).toHaveTextContent('one.wav');
    expect(events[2]).toHaveTextContent('unsupported codec');
    expect(within(failed).getByTestId('job-export')).toBeInTheDocument();
  });

  it('shows a resource strip from get_resource_snapshot', async () => {
    backend();
    render(Jobs);
    const strip = await screen.findByTestId('resource-strip');
    await waitFor(() => expect(strip).toHaveTextContent('13%'));
    expect(strip).toHaveTextContent('4.0 GiB / 16.0 GiB');
    expect(strip).toHaveTextContent('1.0 GiB / 80.0 GiB');
  });

  it('shows the models in memory and unloads them through free_model_cache', async () => {
    const loaded = {
      budget_bytes: 4096 * 1024 ** 2,
      used_bytes: 400 * 1024 ** 2,
      hits: 3,
      misses: 2,
      evictions: 1,
      models: [
        { kind: 'voice', name: 'Alto', device: 'Cpu', precision: 'fp32', bytes: 110 * 1024 ** 2, hits: 2, in_use: true },
        { kind: 'hubert', name: 'hubert_base.pt', device: 'Cpu', precision: 'fp32', bytes: 290 * 1024 ** 2, hits: 1, in_use: false },
      ],
    };
    const be = backend({ get_model_cache: () => loaded, free_model_cache: () => emptyCache });
    render(Jobs);
    const summary = await screen.findByTestId('model-cache-summary');
    expect(summary).toHaveTextContent('2 loaded · 400.0 MiB of 4.0 GiB');
    expect(summary).toHaveTextContent('3 of 5 lookups served without loading · 1 evicted');
    const entries = screen.getAllByTestId('model-cache-entry');
    expect(entries.map((e) => e.dataset.kind)).toEqual(['voice', 'hubert']);
    expect(entries[0]).toHaveTextContent('Alto');
    expect(entries[0]).toHaveTextContent('in use');
    expect(entries[1]).not.toHaveTextContent('in use');
    await fireEvent.click(screen.getByTestId('model-cache-free'));
    await waitFor(() => expect(be.argsOf('free_model_cache')).toHaveLength(1));
    await waitFor(() => expect(screen.queryAllByTestId('model-cache-entry')).toHaveLength(0));
    expect(screen.getByTestId('model-cache')).toHaveTextContent('No model is loaded');
    // The budget is a setting.
    await fireEvent.click(screen.getByTestId('model-cache-budget'));
    expect(app.page).toBe('settings');
  });
});
