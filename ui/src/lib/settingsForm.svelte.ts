// The Settings page's state: the settings as the backend last gave them, and how a field's typed
// text becomes the JSON `set_setting` takes. The backend checks every value as
// `timbre settings set` does; the page shows its refusal rather than guessing at it.
import * as api from './api';
import type { Settings, SettingsView } from './api';
import { t } from './i18n.svelte';

type SettingValue = Settings[keyof Settings];

/** A stored value as its field shows it: a number in the field's unit (`scale` stored units to
 * one), a list one item per line. */
export function settingText(value: SettingValue, scale = 1): string {
  if (Array.isArray(value)) return value.join('\n');
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'object') return JSON.stringify(value);
  return String(scale === 1 ? value : Math.round((value / scale) * 100) / 100);
}

/** The JSON a field's text is sent as (like `current`), or why it cannot be. */
export function settingJson(text: string, current: SettingValue, scale = 1): { json: string } | { problem: string } {
  if (Array.isArray(current)) {
    const lines = text.split('\n').map((line) => line.trim());
    return { json: JSON.stringify(lines.filter((line) => line !== '')) };
  }
  if (typeof current === 'string') return { json: JSON.stringify(text.trim()) };
  if (typeof current === 'boolean') return { json: JSON.stringify(text.trim() === 'true') };
  if (typeof current === 'object') {
    // An object (`judge_weights`) is typed as JSON; the backend checks its fields.
    try {
      return { json: JSON.stringify(JSON.parse(text)) };
    } catch {
      return { problem: t('settings.enter_json') };
    }
  }
  const number = text.trim() === '' ? NaN : Number(text);
  if (!Number.isFinite(number)) return { problem: t('settings.enter_number') };
  // A value typed in a larger unit is stored to the thousandth, not with float noise.
  return { json: JSON.stringify(scale === 1 ? number : Math.round(number * scale * 1000) / 1000) };
}

export class SettingsForm {
  view: SettingsView;

  constructor(view: SettingsView) {
    this.view = $state(view);
  }

  /** Stores `json` as `key`: null once stored, else the backend's refusal. */
  async save(key: keyof Settings, json: string): Promise<string | null> {
    try {
      this.view = await api.setSetting(key, json);
      return null;
    } catch (err) {
      return api.errorMessage(err);
    }
  }
}
