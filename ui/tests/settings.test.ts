import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import App from '../src/App.svelte';
import Settings from '../src/pages/Settings.svelte';
import { app } from '../src/lib/stores.svelte';
import { appearance } from '../src/lib/appearance.svelte';
import { CATALOGUES, LOCALES, LOCALE_NAMES, i18n } from '../src/lib/i18n.svelte';
import { settingJson, settingText } from '../src/lib/settingsForm.svelte';
import type { DeviceReport, Settings as SettingsValues, SettingsView } from '../src/lib/api';
import { SHELL, mockBackend } from './helpers';

/** The backend's defaults (`Settings::default()`), with the folders a fresh library resolves. */
function settingsView(over: Partial<SettingsValues> = {}): SettingsView {
  return {
    settings: {
      max_retries: 3,
      retry_base_secs: 2,
      retry_max_secs: 300,
      light_workers: 2,
      monitor_interval_ms: 1000,
      max_import_duration_secs: 10800,
      alert_ram_percent: 90,
      alert_gpu_memory_percent: 95,
      alert_gpu_temperature_c: 85,
      models_dir: '',
      model_cache_mb: 4096,
      device: '',
      extraction_device: '',
      download_endpoint: '',
      download_mirrors: [],
      download_stall_bytes: 100000,
      download_stall_secs: 60,
      judge_weights: { similarity: 4, pitch: 2, voicing: 1, reconstruction: 2, artefacts: 1 },
      update_feed_url: 'https://timbre.studio/updates/stable.json',
      update_check: true,
      ...over,
    },
    data_dir: '/home/me/.local/share/timbre',
    models_dir: '/home/me/.local/share/timbre/models',
  };
}

function deviceReport(over: Partial<DeviceReport> = {}): DeviceReport {
  return { available: ['cpu', 'cuda:0', 'cuda:1'], device: '', extraction_device: '', main: 'cuda:0', extraction: 'cuda:0', problem: null, ...over };
}

/** A backend that stores what `set_setting` is given, as JSON, and refuses what `refuse` names. */
function backend(refuse: (key: string, value: string) => string | null = () => null, extra: Record<string, (a: any) => unknown> = {}) {
  let view = settingsView();
  return mockBackend({
    get_settings: () => view,
    get_device_report: () => deviceReport(),
    set_setting: ({ key, value }: { key: keyof SettingsValues; value: string }) => {
      const refusal = refuse(key, value);
      if (refusal !== null) throw { kind: 'invalid_input', message: refusal };
      view = { ...view, settings: { ...view.settings, [key]: JSON.parse(value) } };
      return view;
    },
    ...extra,
  });
}

const field = (key: string) => screen.getByTestId(`setting-${key}`) as HTMLInputElement;

async function change(key: string, text: string) {
  await fireEvent.input(field(key), { target: { value: text } });
  await fireEvent.change(field(key));
}

describe('Settings page', () => {
  it('shows every setting as stored, and the data and models folders', async () => {
    backend();
    render(Settings);
    expect(await screen.findByTestId('setting-model_cache_mb')).toHaveValue(4096);
    expect(field('max_retries')).toHaveValue(3);
    expect(field('retry_base_secs')).toHaveValue(2);
    expect(field('light_workers')).toHaveValue(2);
    // Seconds shown as minutes.
    expect(field('max_import_duration_secs')).toHaveValue(180);
    expect(field('alert_gpu_temperature_c')).toHaveValue(85);
    expect(field('download_stall_bytes')).toHaveValue(100000);
    expect(field('models_dir')).toHaveValue('');
    expect(field('models_dir')).toHaveAttribute('placeholder', 'Automatic');
    expect(field('download_mirrors')).toHaveValue('');
    expect(screen.getByTestId('settings-models-dir')).toHaveTextContent('/home/me/.local/share/timbre/models');
    expect(screen.getByTestId('settings-data-dir')).toHaveTextContent('/home/me/.local/share/timbre');
    expect(screen.getByTestId('settings-library')).toHaveTextContent('TIMBRE_DATA_DIR');
  });

  it('stores a changed number as JSON and shows the stored value', async () => {
    const be = backend();
    render(Settings);
    await screen.findByTestId('setting-model_cache_mb');
    await change('model_cache_mb', '2048');
    await waitFor(() => expect(be.argsOf('set_setting')).toEqual([{ key: 'model_cache_mb', value: '2048' }]));
    expect(await screen.findByTestId('setting-model_cache_mb-saved')).toHaveTextContent('Saved');
    expect(field('model_cache_mb')).toHaveValue(2048);
    // Minutes on the page, seconds in the setting.
    await change('max_import_duration_secs', '90');
    await waitFor(() => expect(be.argsOf('set_setting').at(-1)).toEqual({ key: 'max_import_duration_secs', value: '5400' }));
    await waitFor(() => expect(field('max_import_duration_secs')).toHaveValue(90));
  });

  it('shows a refusal beside its field and keeps what was typed', async () => {
    const be = backend((key, value) => {
      if (key === 'model_cache_mb' && value === '-1') return 'model_cache_mb: -1 is outside 0..=1048576';
      if (key === 'download_endpoint') return `setting download_endpoint: ${value} is not an http:// or https:// URL with a host`;
      return null;
    });
    render(Settings);
    await screen.findByTestId('setting-model_cache_mb');
    await change('model_cache_mb', '-1');
    const error = await screen.findByTestId('setting-model_cache_mb-error');
    expect(error).toHaveTextContent('model_cache_mb: -1 is outside 0..=1048576');
    expect(field('model_cache_mb')).toHaveValue(-1);
    expect(field('model_cache_mb')).toHaveAttribute('aria-invalid', 'true');
    expect(screen.queryByTestId('setting-model_cache_mb-saved')).toBeNull();
    // Only that field says so.
    expect(screen.queryByTestId('setting-max_retries-error')).toBeNull();

    await change('download_endpoint', 'file:///etc');
    expect(await screen.findByTestId('setting-download_endpoint-error')).toHaveTextContent('setting download_endpoint');
    expect(be.argsOf('set_setting').at(-1)).toEqual({ key: 'download_endpoint', value: '"file:///etc"' });
    expect(field('download_endpoint')).toHaveValue('file:///etc');

    // Corrected, it is stored and the refusal goes.
    await change('model_cache_mb', '512');
    await waitFor(() => expect(screen.queryByTestId('setting-model_cache_mb-error')).toBeNull());
    expect(field('model_cache_mb')).toHaveValue(512);
  });

  it('says a number field needs a number without asking the backend', async () => {
    const be = backend();
    render(Settings);
    await screen.findByTestId('setting-max_retries');
    await change('max_retries', '');
    expect(await screen.findByTestId('setting-max_retries-error')).toHaveTextContent('Enter a number.');
    expect(be.argsOf('set_setting')).toEqual([]);
  });

  it('stores the mirrors, one per line, as a JSON list', async () => {
    const be = backend();
    render(Settings);
    await screen.findByTestId('setting-download_mirrors');
    await change('download_mirrors', ' https://hf-mirror.com \n\nhttp://192.168.1.2:8080/hf\n');
    await waitFor(() =>
      expect(be.argsOf('set_setting')).toEqual([
        { key: 'download_mirrors', value: '["https://hf-mirror.com","http://192.168.1.2:8080/hf"]' },
      ]),
    );
    await waitFor(() => expect(field('download_mirrors')).toHaveValue('https://hf-mirror.com\nhttp://192.168.1.2:8080/hf'));
  });

  it('stores a models folder and shows the folder now in use', async () => {
    const be = backend(() => null, {
      set_setting: ({ key, value }: { key: string; value: string }) => ({
        ...settingsView({ [key]: JSON.parse(value) }),
        models_dir: '/mnt/weights',
      }),
    });
    render(Settings);
    await screen.findByTestId('setting-models_dir');
    await change('models_dir', '  /mnt/weights ');
    await waitFor(() => expect(be.argsOf('set_setting')).toEqual([{ key: 'models_dir', value: '"/mnt/weights"' }]));
    await waitFor(() => expect(screen.getByTestId('settings-models-dir')).toHaveTextContent('/mnt/weights'));
    expect(field('models_dir')).toHaveValue('/mnt/weights');
  });

  it('says when the settings cannot be read', async () => {
    backend(() => null, {
      get_settings: () => {
        throw { kind: 'io', message: 'library database is locked' };
      },
    });
    render(Settings);
    expect(await screen.findByTestId('settings-load-error')).toHaveTextContent('library database is locked');
  });

  it('puts dataset preparation on the second GPU', async () => {
    const be = backend(() => null, {
      set_devices: ({ device, extractionDevice }: { device: string; extractionDevice: string }) =>
        deviceReport({ device, extraction_device: extractionDevice, extraction: extractionDevice || 'cuda:0' }),
    });
    render(Settings);
    const extraction = await screen.findByTestId('device-extraction');
    expect(screen.getByTestId('settings-devices')).toContainElement(extraction);
    expect(screen.getByTestId('device-main')).toHaveTextContent('Auto (cuda:0)');
    expect(screen.getByTestId('device-settings')).toHaveTextContent('dataset prepares while a model trains');
    await fireEvent.change(extraction, { target: { value: 'cuda:1' } });
    await waitFor(() => expect(be.argsOf('set_devices')).toEqual([{ device: '', extractionDevice: 'cuda:1' }]));
    await waitFor(() => expect(screen.getByTestId('device-extraction')).toHaveValue('cuda:1'));
  });

  it('says the CPU does the work when there is no GPU, and shows a missing device', async () => {
    backend(() => null, { get_device_report: () => deviceReport({ available: ['cpu'], main: 'cpu', extraction: 'cpu' }) });
    const first = render(Settings);
    expect(await screen.findByTestId('devices-cpu-only')).toHaveTextContent('No GPU seen');
    first.unmount();
    backend(() => null, {
      get_device_report: () =>
        deviceReport({
          extraction_device: 'cuda:1',
          available: ['cpu', 'cuda:0'],
          main: null,
          extraction: null,
          problem: 'setting extraction_device: device `cuda:1` asked for, but libtorch sees 1 CUDA device(s)',
        }),
    });
    render(Settings);
    expect(await screen.findByTestId('devices-problem')).toHaveTextContent('setting extraction_device');
  });

  it('leads to the Jobs page for what the model cache holds', async () => {
    backend();
    app.page = 'settings';
    render(Settings);
    await fireEvent.click(await screen.findByTestId('settings-open-jobs'));
    expect(app.page).toBe('jobs');
  });
});

describe('Appearance', () => {
  afterEach(() => {
    delete (window as any).matchMedia;
  });

  it('keeps the chosen theme in localStorage and applies it to the document', async () => {
    backend();
    render(Settings);
    const light = screen.getByTestId('setting-theme-light');
    expect(screen.getByTestId('setting-theme-system')).toBeChecked();
    await fireEvent.click(light);
    expect(light).toBeChecked();
    expect(document.documentElement.dataset.theme).toBe('light');
    expect(JSON.parse(localStorage.getItem('timbre.appearance')!)).toEqual({ theme: 'light' });
    await fireEvent.click(screen.getByTestId('setting-theme-dark'));
    expect(document.documentElement.dataset.theme).toBe('dark');
    expect(JSON.parse(localStorage.getItem('timbre.appearance')!)).toEqual({ theme: 'dark' });
  });

  it('applies the saved theme at start-up, and a corrupt one leaves the system theme', () => {
    localStorage.setItem('timbre.appearance', JSON.stringify({ theme: 'light' }));
    appearance.restore();
    expect(appearance.theme).toBe('light');
    expect(document.documentElement.dataset.theme).toBe('light');
    localStorage.setItem('timbre.appearance', JSON.stringify({ theme: 'sepia' }));
    appearance.restore();
    expect(appearance.theme).toBe('system');
    // No matchMedia (jsdom): the dark palette.
    expect(document.documentElement.dataset.theme).toBe('dark');
  });

  it('follows the desktop on System', () => {
    const listeners: (() => void)[] = [];
    const query = { matches: true, addEventListener: (_: string, fn: () => void) => listeners.push(fn) };
    (window as any).matchMedia = (q: string) => (q === '(prefers-color-scheme: light)' ? query : null);
    appearance.choose('system');
    expect(document.documentElement.dataset.theme).toBe('light');
    query.matches = false;
    for (const fn of listeners) fn();
    expect(document.documentElement.dataset.theme).toBe('dark');
    // A chosen theme stays when the desktop changes.
    appearance.choose('dark');
    query.matches = true;
    for (const fn of listeners) fn();
    expect(document.documentElement.dataset.theme).toBe('dark');
  });
});

describe('Language', () => {
  it('offers the system language and every catalogue, each named in its own language', async () => {
    vi.spyOn(navigator, 'languages', 'get').mockReturnValue(['ja-JP', 'en-US']);
    backend();
    render(Settings);
    const select = screen.getByTestId('setting-language') as HTMLSelectElement;
    expect(select).toHaveAccessibleName('Language');
    expect(select).toHaveValue('system');
    const options = [...select.options];
    expect(options.map((o) => o.value)).toEqual(['system', ...LOCALES]);
    expect(options[0]).toHaveTextContent('System (日本語)');
    expect(options.slice(1).map((o) => [o.lang, o.textContent])).toEqual(LOCALES.map((l) => [l, LOCALE_NAMES[l]]));
    // The section comes just before Appearance.
    expect(screen.getByTestId('settings-language').nextElementSibling).toBe(screen.getByTestId('settings-appearance'));
  });

  it('turns the page into the chosen language and keeps the choice; System follows the system', async () => {
    const languages = vi.spyOn(navigator, 'languages', 'get').mockReturnValue(['en-US']);
    backend();
    render(Settings);
    const heading = screen.getByRole('heading', { level: 1 });
    expect(heading).toHaveTextContent('Settings');
    await fireEvent.change(screen.getByTestId('setting-language'), { target: { value: 'de' } });
    expect(i18n.choice).toBe('de');
    expect(heading).toHaveTextContent(CATALOGUES.de['settings.title']);
    expect(heading).toHaveTextContent('Einstellungen');
    expect(document.documentElement.lang).toBe('de');
    expect(JSON.parse(localStorage.getItem('timbre.language')!)).toEqual({ language: 'de' });
    expect(screen.getByTestId('setting-language')).toHaveValue('de');

    languages.mockReturnValue(['ja-JP']);
    await fireEvent.change(screen.getByTestId('setting-language'), { target: { value: 'system' } });
    expect(i18n.locale).toBe('ja');
    expect(heading).toHaveTextContent(CATALOGUES.ja['settings.title']);
    expect(JSON.parse(localStorage.getItem('timbre.language')!)).toEqual({ language: 'system' });
    // Saved values come back in the new language too: a refusal the UI writes itself.
    await screen.findByTestId('setting-max_retries');
    await change('max_retries', '');
    expect(await screen.findByTestId('setting-max_retries-error')).toHaveTextContent(CATALOGUES.ja['settings.enter_number']);
  });
});

describe('field text', () => {
  it('shows numbers in the field unit and sends them in the stored one', () => {
    expect(settingText(10800, 60)).toBe('180');
    expect(settingText(100, 60)).toBe('1.67');
    expect(settingJson('1.1', 10800, 60)).toEqual({ json: '66' });
    expect(settingJson('2.5', 2)).toEqual({ json: '2.5' });
    expect(settingJson('abc', 2)).toEqual({ problem: 'Enter a number.' });
    expect(settingJson(' cuda:1 ', '')).toEqual({ json: '"cuda:1"' });
    expect(settingText(['https://a', 'https://b'])).toBe('https://a\nhttps://b');
    expect(settingJson('https://a\n \nhttps://b', [])).toEqual({ json: '["https://a","https://b"]' });
    const weights = { similarity: 4, pitch: 2, voicing: 1, reconstruction: 2, artefacts: 1 };
    expect(settingText(weights)).toBe(JSON.stringify(weights));
    expect(settingJson('{"similarity": 5}', weights)).toEqual({ json: '{"similarity":5}' });
    expect(settingJson('{similarity', weights)).toEqual({ problem: 'Enter a JSON object.' });
  });
});

describe('navigation', () => {
  it('reaches the Settings page from the sidebar', async () => {
    mockBackend({
      ...SHELL,
      get_settings: () => settingsView(),
      get_device_report: () => deviceReport(),
    });
    render(App);
    await screen.findByTestId('library-empty');
    await fireEvent.click(screen.getByTestId('nav-settings'));
    expect(await screen.findByTestId('settings-page')).toBeInTheDocument();
    expect(screen.getByTestId('nav-settings')).toHaveAttribute('aria-current', 'page');
    expect(await screen.findByTestId('settings-data-dir')).toHaveTextContent('/home/me/.local/share/timbre');
  });
});
