// The Cover page's songs, choices and jobs (Svelte 5 runes), kept here so they survive switching
// pages and so a drop on the page can add songs.
import { modelsByTask, vocalsModels } from './clean';
import * as api from './api';
import type { AudioInput, EffectPreset, IsolationModels } from './api';
import { app } from './stores.svelte';
import { sameInput, studio } from './studio.svelte';
import { basename } from './format';
import { t } from './i18n.svelte';
import { coverSettings, type CoverForm } from './cover';

const DEFAULT_FORM: CoverForm = {
  modelId: null,
  separation: { kind: 'rough' },
  secondPass: null,
  vocalGainDb: 0,
  instrumentalGainDb: 0,
  matchLoudness: true,
  format: 'wav16',
  effects: null,
};

class CovererState {
  songs = $state<AudioInput[]>([]);
  form = $state<CoverForm>({ ...DEFAULT_FORM });
  models = $state<IsolationModels | null>(null);
  /** The effects presets to choose from for the vocals. */
  presets = $state<EffectPreset[]>([]);
  /** Cover jobs queued from this window, oldest first. */
  jobIds = $state<number[]>([]);

  songLabel(song: AudioInput): string {
    if ('file' in song) return basename(song.file);
    return app.takes.find((take) => take.id === song.take)?.name ?? t('cover.take_fallback', { id: String(song.take) });
  }

  async load(): Promise<void> {
    try {
      [this.models, this.presets] = await Promise.all([api.listIsolationModels(), api.listEffectPresets()]);
      const names = vocalsModels(this.models.models).map((m) => m.name);
      const passes = modelsByTask(this.models.models).flatMap((group) => group.models.map((m) => m.name));
      const { separation, secondPass } = this.form;
      // The best separation there is: the first vocals model, else the rough preview.
      if (separation.kind === 'model' ? !names.includes(separation.name) : names.length > 0 && this.jobIds.length === 0) {
        this.form.separation = names.length > 0 ? { kind: 'model', name: names[0] } : { kind: 'rough' };
      }
      if (secondPass !== null && !passes.includes(secondPass)) this.form.secondPass = null;
      // The chosen chain as one of the presets just read, which the drop-down shows by identity
      // (a deleted preset's chain no longer applies).
      const chosen = this.form.effects && JSON.stringify(this.form.effects);
      if (chosen) this.form.effects = this.presets.find((p) => JSON.stringify(p.chain) === chosen)?.chain ?? null;
    } catch (err) {
      app.reportError(err, t('cover.error_models'));
    }
  }

  addSongs(songs: AudioInput[]) {
    for (const song of songs) if (!this.songs.some((s) => sameInput(s, song))) this.songs.push(song);
  }

  removeSong(song: AudioInput) {
    this.songs = this.songs.filter((s) => !sameInput(s, song));
  }

  /** Queues one cover job per song; returns their ids. */
  async cover(): Promise<number[]> {
    try {
      const options = await studio.currentOptions();
      const ids = await api.submitCovers([...this.songs], coverSettings(this.form, options));
      this.jobIds.push(...ids);
      return ids;
    } catch (err) {
      app.reportError(err, t('cover.error_queue'));
      return [];
    }
  }

  /** Back to a blank state (tests). */
  reset() {
    this.songs = [];
    this.form = { ...DEFAULT_FORM };
    this.models = null;
    this.jobIds = [];
  }
}

export const coverer = new CovererState();
