import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import App from '../src/App.svelte';
import Settings from '../src/pages/Settings.svelte';
import { app } from '../src/lib/stores.svelte';
import type { Release, SettingsView, UpdateCheck } from '../src/lib/api';
import { SHELL, makeAbout, makeJob, mockBackend, type Handler } from './helpers';

function view(updateCheck = true): SettingsView {
  return {
    settings: {
      max_retries: 3, retry_base_secs: 2, retry_max_secs: 300, light_workers: 2, monitor_interval_ms: 1000,
      max_import_duration_secs: 10800, alert_ram_percent: 90, alert_gpu_memory_percent: 95, alert_gpu_temperature_c: 85,
      models_dir: '', model_cache_mb: 4096, device: '', extraction_device: '', download_endpoint: '', download_mirrors: [],
      download_stall_bytes: 100000, download_stall_secs: 60,
      judge_weights: { similarity: 4, pitch: 2, voicing: 1, reconstruction: 2, artefacts: 1 },
      update_feed_url: 'http://127.0.0.1:8123/stable.json', update_check: updateCheck,
    },
    data_dir: '/home/me/.local/share/timbre',
    models_dir: '/home/me/.local/share/timbre/models',
  };
}

const RELEASE: Release = {
  version: '0.2.0',
  date: '2026-12-20',
  notes: 'Faster covers.\nRefineGAN voices play.',
  packages: [
    { form: 'tar.gz', arch: 'x86_64', url: 'https://timbre.studio/d/timbre-studio-0.2.0-x86_64-linux.tar.gz', size_bytes: 231_000_000, sha256: 'a'.repeat(64) },
    { form: 'deb', arch: 'x86_64', url: 'https://timbre.studio/d/timbre-studio_0.2.0_amd64.deb', size_bytes: 229_000_000, sha256: 'b'.repeat(64) },
  ],
};

function newer(over: Partial<UpdateCheck> = {}): UpdateCheck {
  return {
    current: '0.1.0', latest: RELEASE, newer: true, feed_url: 'http://127.0.0.1:8123/stable.json',
    installed_as: 'tar.gz', can_install: true, how_to_update: null, ...over,
  };
}

function backend(extra: Record<string, Handler> = {}) {
  let settings = view();
  return mockBackend({
    get_settings: () => settings,
    get_device_report: () => ({ available: ['cpu', 'cuda:0'], device: '', extraction_device: '', main: 'cuda:0', extraction: 'cuda:0', problem: null }),
    set_setting: ({ key, value }: { key: string; value: string }) => {
      settings = { ...settings, settings: { ...settings.settings, [key]: JSON.parse(value) } };
      return settings;
    },
    ...extra,
  });
}

describe('About and updates', () => {
  it('shows the version with its commit, the engine and how this copy was installed', async () => {
    backend({ get_about: () => makeAbout({}, { installed_as: 'deb' }) });
    render(Settings);
    expect(await screen.findByTestId('about-version')).toHaveTextContent('Timbre Studio 0.1.0 (004c96b1a2b3)');
    expect(screen.getByTestId('about-engine')).toHaveTextContent('libtorch 2.11.0, CPU');
    expect(screen.getByTestId('about-installed-as')).toHaveTextContent('Debian package (updated by apt)');
  });

  it('names CUDA as the engine only where its runtime is loaded and a driver answers', async () => {
    const loaded = '/home/me/.local/share/timbre/runtime/cuda/torch/lib/libtorch_cuda.so';
    backend({ get_about: () => makeAbout({ loaded, nvidia_driver: false }) });
    const first = render(Settings);
    expect(await screen.findByTestId('about-engine')).toHaveTextContent('libtorch 2.11.0, CPU');
    first.unmount();
    backend({ get_about: () => makeAbout({ loaded, nvidia_driver: true }) });
    render(Settings);
    expect(await screen.findByTestId('about-engine')).toHaveTextContent('libtorch 2.11.0, CUDA');
  });

  it('offers a newer release with its notes and installs it only when asked', async () => {
    const be = backend({
      check_for_updates: () => newer(),
      install_update: ({ version }: { version: string }) => makeJob({ id: 9, kind: 'update_install', params: { version } }),
    });
    render(Settings);
    await fireEvent.click(await screen.findByTestId('update-check'));
    expect(await screen.findByTestId('update-release')).toHaveTextContent('Timbre Studio 0.2.0 is out (this is 0.1.0), released 2026-12-20');
    expect(screen.getByTestId('update-notes')).toHaveTextContent('RefineGAN voices play.');
    expect(be.argsOf('install_update')).toEqual([]);
    await fireEvent.click(screen.getByTestId('update-install'));
    await waitFor(() => expect(be.argsOf('install_update')).toEqual([{ version: '0.2.0' }]));
    expect(await screen.findByTestId('update-job')).toHaveTextContent('Installing Timbre Studio 0.2.0');
    expect(app.jobs.map((j) => j.kind)).toEqual(['update_install']);
  });

  it('says how to update a .deb instead of offering to install it', async () => {
    backend({
      check_for_updates: () =>
        newer({ installed_as: 'deb', can_install: false, how_to_update: 'installed from a .deb: update it with your package manager (apt)' }),
    });
    render(Settings);
    await fireEvent.click(await screen.findByTestId('update-check'));
    expect(await screen.findByTestId('update-how')).toHaveTextContent('package manager (apt)');
    expect(screen.queryByTestId('update-install')).toBeNull();
  });

  it('shows a refused feed as the backend words it, and up to date when nothing is newer', async () => {
    let answer: () => UpdateCheck = () => {
      throw { kind: 'invalid_input', message: 'the update feed http://127.0.0.1:8123/stable.json is not signed by the Timbre Studio key' };
    };
    backend({ check_for_updates: () => answer() });
    render(Settings);
    await fireEvent.click(await screen.findByTestId('update-check'));
    expect(await screen.findByTestId('update-error')).toHaveTextContent('is not signed by the Timbre Studio key');
    answer = () => newer({ latest: { ...RELEASE, version: '0.1.0' }, newer: false, can_install: false });
    await fireEvent.click(screen.getByTestId('update-check'));
    expect(await screen.findByTestId('update-up-to-date')).toHaveTextContent('Timbre Studio 0.1.0 is up to date.');
    expect(screen.queryByTestId('update-error')).toBeNull();
  });

  it('turns the check off with its switch, which disables Check now', async () => {
    const be = backend();
    render(Settings);
    const toggle = (await screen.findByTestId('setting-update_check')) as HTMLInputElement;
    expect(toggle.checked).toBe(true);
    await fireEvent.click(toggle);
    await waitFor(() => expect(be.argsOf('set_setting')).toEqual([{ key: 'update_check', value: 'false' }]));
    await waitFor(() => expect(screen.getByTestId('update-check')).toBeDisabled());
  });

  it('tells at start that a newer version is out, leading to Settings', async () => {
    backend({ ...SHELL, check_for_updates: () => newer() });
    render(App);
    const notice = await screen.findByText('Timbre Studio 0.2.0 is out');
    expect(notice).toBeInTheDocument();
    await fireEvent.click(await screen.findByRole('button', { name: "What's new" }));
    expect(app.page).toBe('settings');
  });
});

describe('Enable GPU', () => {
  it('offers the CUDA runtime where an NVIDIA driver answers and follows its job', async () => {
    const be = backend({
      get_about: () => makeAbout({ nvidia_driver: true }),
      install_cuda_runtime: () => makeJob({ id: 4, kind: 'runtime_install', state: 'running', progress: 0.25, message: 'torch: 230 MB of 920 MB', params: { runtime: 'cuda' } }),
    });
    render(Settings);
    const enable = await screen.findByTestId('gpu-runtime-enable');
    expect(screen.getByTestId('gpu-runtime')).toHaveTextContent('(2.4 GiB)');
    await fireEvent.click(enable);
    await waitFor(() => expect(be.argsOf('install_cuda_runtime')).toHaveLength(1));
    expect(await screen.findByTestId('gpu-runtime-installing')).toBeInTheDocument();
    expect(screen.getByRole('progressbar', { name: 'GPU runtime' })).toHaveAttribute('aria-valuenow', '25');
    expect(screen.getByTestId('gpu-runtime')).toHaveTextContent('torch: 230 MB of 920 MB');
    expect(screen.getByTestId('gpu-runtime-cancel')).toBeInTheDocument();
  });

  it('says the CPU runs everything without a driver, and removes an installed runtime', async () => {
    let installed = true;
    const be = backend({
      get_about: () => makeAbout(installed ? { installed: true, bytes_on_disk: 2_400_000_000, problem: null } : {}),
      remove_cuda_runtime: () => {
        installed = false;
        return makeAbout().runtime;
      },
    });
    render(Settings);
    expect(await screen.findByTestId('gpu-runtime-installed')).toHaveTextContent('restart Timbre Studio to use the GPU');
    await fireEvent.click(screen.getByTestId('gpu-runtime-remove'));
    await waitFor(() => expect(be.argsOf('remove_cuda_runtime')).toHaveLength(1));
    expect(await screen.findByTestId('gpu-runtime-no-driver')).toHaveTextContent('No NVIDIA driver found');
  });
});

describe('Open with', () => {
  it('imports the files the app was opened with', async () => {
    const be = backend({
      take_opened_files: () => ['/home/me/song.wav'],
      ...SHELL,
      import_files: () => 12,
    });
    render(App);
    await waitFor(() => expect(be.argsOf('import_files')).toEqual([{ paths: ['/home/me/song.wav'], voiceId: null }]));
  });
});
