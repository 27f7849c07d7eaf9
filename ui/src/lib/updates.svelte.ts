// The update check (Svelte 5 runes): made once at start, when `update_check` is on, and again
// from Settings' About section, which shows what it found. A newer release at start is a notice
// leading to the About section; nothing is installed unless the user presses Install there.
import * as api from './api';
import type { Job, UpdateCheck } from './api';
import { app } from './stores.svelte';
import { t } from './i18n.svelte';

class UpdatesState {
  check = $state<UpdateCheck | null>(null);
  error = $state<string | null>(null);
  checking = $state(false);
  /** The `update_install` job started from here, while it runs and after. */
  installJob = $state<Job | null>(null);

  /** Asks the feed; a failure is kept in `error`, the last answer in `check`. */
  async checkNow(): Promise<UpdateCheck | null> {
    this.checking = true;
    try {
      this.check = await api.checkForUpdates();
      this.error = null;
      return this.check;
    } catch (err) {
      this.error = api.errorMessage(err);
      return null;
    } finally {
      this.checking = false;
    }
  }

  /** The start's check: quiet unless a newer release is out (checks off, or offline, is not news). */
  async checkAtStart(): Promise<void> {
    const found = await this.checkNow();
    this.error = null;
    if (found?.newer && found.latest) {
      app.notify(t('settings.update_available', { version: found.latest.version }), 'info', {
        label: t('settings.update_see'),
        run: () => (app.page = 'settings'),
      });
    }
  }

  /** Queues the install of the offered release and follows its job. */
  async install(): Promise<void> {
    const latest = this.check?.latest;
    if (!latest) return;
    try {
      const job = await api.installUpdate(latest.version);
      this.installJob = job;
      app.addQueuedJob(job);
      app.watchJob(job.id, t('settings.update_installing', { version: latest.version }));
    } catch (err) {
      app.reportError(err, t('settings.update_install_failed'));
    }
  }

  /** The install job as the job notifications last told it. */
  get job(): Job | null {
    const id = this.installJob?.id;
    return id === undefined ? null : (app.jobs.find((j) => j.id === id) ?? this.installJob);
  }

  reset() {
    this.check = null;
    this.error = null;
    this.checking = false;
    this.installJob = null;
  }
}

export const updates = new UpdatesState();
