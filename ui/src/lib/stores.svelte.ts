// Global reactive app state (Svelte 5 runes) and the actions that change it.
import * as api from './api';
import type { ErrorKind, Job, Notification, Take, Voice } from './api';
import { JOB_TITLES, TERMINAL_STATES, errorKind, errorMessage } from './api';
import { player, type PlaybackState } from './player';
import { t } from './i18n.svelte';

export type Page =
  'library' | 'record' | 'live' | 'convert' | 'compare' | 'clean' | 'cover' | 'train' | 'models' | 'jobs' | 'settings';
export type NoticeLevel = 'error' | 'warning' | 'info' | 'success';

export interface Notice {
  id: number;
  level: NoticeLevel;
  text: string;
  action?: { label: string; run: () => void };
  /** The kind of the failure a notice reports: the banner explains it (errorHints.ts) beside the
   * message, which stays as the backend wrote it. */
  kind?: ErrorKind;
}

const ERROR_TIMEOUT_MS = 15000;
export const INFO_TIMEOUT_MS = 6000;

class AppState {
  page = $state<Page>('library');
  voices = $state<Voice[]>([]);
  takes = $state<Take[]>([]);
  takesLoaded = $state(false);
  libraryLoading = $state(false);
  /** null = all takes */
  voiceFilter = $state<number | null>(null);
  jobs = $state<Job[]>([]);
  jobsLoaded = $state(false);
  notices = $state<Notice[]>([]);
  dragging = $state(false);
  playback = $state<PlaybackState>(player.state);

  private nextNoticeId = 1;
  private timers = new Map<number, ReturnType<typeof setTimeout>>();
  private librarySeq = 0;
  private libraryTimer: ReturnType<typeof setTimeout> | null = null;
  /** Jobs started from this window whose end is announced: the notice that says they started
   * (null: none) and what else their end does. */
  private watched = new Map<number, { notice: number | null; onEnd?: (job: Job) => void }>();
  private liveDuringRefresh: Map<number, Job> | null = null;
  private libraryListeners = new Set<() => void>();
  private notificationListeners = new Set<(n: Notification) => void>();

  constructor() {
    player.subscribe((s) => (this.playback = s));
  }

  get runningJobs(): number {
    return this.jobs.filter((j) => j.state === 'running' || j.state === 'queued').length;
  }

  get currentVoice(): Voice | null {
    return this.voices.find((v) => v.id === this.voiceFilter) ?? null;
  }

  voiceName(id: number | null): string {
    if (id === null) return '';
    return this.voices.find((v) => v.id === id)?.name ?? t('app.voice_fallback', { id: String(id) });
  }

  // ---- notices ----
  notify(text: string, level: NoticeLevel = 'info', action?: Notice['action'], kind?: ErrorKind | null): number {
    const existing = this.notices.find((n) => n.text === text && n.level === level);
    const id = existing ? existing.id : this.nextNoticeId++;
    if (!existing) this.notices.push({ id, level, text, action, ...(kind ? { kind } : {}) });
    const old = this.timers.get(id);
    if (old) clearTimeout(old);
    const ms = level === 'error' || level === 'warning' ? ERROR_TIMEOUT_MS : INFO_TIMEOUT_MS;
    this.timers.set(
      id,
      setTimeout(() => this.dismiss(id), ms),
    );
    return id;
  }

  /** Show a failed command's message to the user (`context`: what failed, in the UI's language),
   * with the kind of failure it reported. */
  reportError(err: unknown, context?: string): void {
    const msg = errorMessage(err);
    this.notify(context ? t('errors.with_context', { context, message: msg }) : msg, 'error', undefined, errorKind(err));
  }

  dismiss(id: number) {
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
    this.notices = this.notices.filter((n) => n.id !== id);
  }

  // ---- library ----
  async refreshLibrary(): Promise<void> {
    const seq = ++this.librarySeq;
    const filter = this.voiceFilter;
    this.libraryLoading = true;
    try {
      const [voices, takes] = await Promise.all([api.listVoices(), api.listTakes(filter)]);
      if (seq !== this.librarySeq) return;
      this.voices = voices;
      this.takes = takes;
      this.takesLoaded = true;
      if (filter !== null && !voices.some((v) => v.id === filter)) {
        this.voiceFilter = null;
        void this.refreshLibrary();
      }
    } catch (err) {
      if (seq === this.librarySeq) this.reportError(err, t('app.library_load_failed'));
    } finally {
      if (seq === this.librarySeq) this.libraryLoading = false;
    }
  }

  /** Coalesce bursts of library_changed events (an import emits many). */
  scheduleLibraryRefresh(delayMs = 150) {
    if (this.libraryTimer) clearTimeout(this.libraryTimer);
    this.libraryTimer = setTimeout(() => {
      this.libraryTimer = null;
      void this.refreshLibrary();
      for (const fn of this.libraryListeners) fn();
    }, delayMs);
  }

  /** Runs `fn` whenever the library changed (models, conversions…); returns the unsubscribe. */
  onLibraryChanged(fn: () => void): () => void {
    this.libraryListeners.add(fn);
    return () => this.libraryListeners.delete(fn);
  }

  setVoiceFilter(id: number | null) {
    if (this.voiceFilter === id) return;
    this.voiceFilter = id;
    void this.refreshLibrary();
  }

  upsertTake(take: Take) {
    const i = this.takes.findIndex((t) => t.id === take.id);
    const visible = this.voiceFilter === null || take.voice_id === this.voiceFilter;
    if (i >= 0) {
      if (visible) this.takes[i] = take;
      else this.takes.splice(i, 1);
    } else if (visible) {
      this.takes.unshift(take);
    }
  }

  removeTake(id: number) {
    this.takes = this.takes.filter((t) => t.id !== id);
  }

  async refreshVoices(): Promise<void> {
    try {
      this.voices = await api.listVoices();
    } catch (err) {
      this.reportError(err, t('app.voices_load_failed'));
    }
  }

  async createVoice(name: string): Promise<Voice | null> {
    try {
      const v = await api.createVoice(name);
      if (!this.voices.some((x) => x.id === v.id)) this.voices.push(v);
      return v;
    } catch (err) {
      this.reportError(err, t('app.voice_create_failed'));
      return null;
    }
  }

  // ---- jobs ----
  async refreshJobs(): Promise<void> {
    // Live updates that arrive while list_jobs is in flight are newer than its answer.
    const live = new Map<number, Job>();
    this.liveDuringRefresh = live;
    try {
      const jobs = await api.listJobs();
      const byId = new Map(this.jobs.map((j) => [j.id, j]));
      for (const j of jobs) byId.set(j.id, j);
      for (const j of live.values()) byId.set(j.id, j);
      this.jobs = [...byId.values()];
      this.jobsLoaded = true;
    } catch (err) {
      this.reportError(err, t('app.jobs_load_failed'));
    } finally {
      if (this.liveDuringRefresh === live) this.liveDuringRefresh = null;
    }
  }

  /** A job as the command that queued it answered. The job's own notifications can come first
   * (a quick download ends before the answer arrives) and are newer, so then it is left out. */
  addQueuedJob(job: Job) {
    if (!this.jobs.some((j) => j.id === job.id)) this.upsertJob(job);
  }

  upsertJob(job: Job) {
    this.liveDuringRefresh?.set(job.id, job);
    const i = this.jobs.findIndex((j) => j.id === job.id);
    if (i >= 0) this.jobs[i] = job;
    else this.jobs.push(job);
    this.announceEnd(job);
  }

  /** Announces how the job ends, then runs `onEnd` with it; `started`, when given, is shown
   * (with a way to the Jobs page) until then, so "Importing…" never stays beside "Import finished". */
  watchJob(id: number, started?: string, onEnd?: (job: Job) => void) {
    const notice = started ? this.notify(started, 'info', { label: t('app.view_job'), run: () => (this.page = 'jobs') }) : null;
    this.watched.set(id, { notice, onEnd });
    // A job that fails at once can report its end before the command that queued it answers.
    const known = this.jobs.find((j) => j.id === id);
    if (known) this.announceEnd(known);
  }

  /** The end of a watched job: its notice replaced by how it ended, then its `onEnd`. */
  private announceEnd(job: Job) {
    const watch = this.watched.get(job.id);
    if (!watch || !TERMINAL_STATES.includes(job.state)) return;
    this.watched.delete(job.id);
    if (watch.notice !== null) this.dismiss(watch.notice);
    const what = t(JOB_TITLES[job.kind]);
    if (job.state === 'succeeded')
      this.notify(job.message ? t('app.job_finished_message', { what, message: job.message }) : t('app.job_finished', { what }), 'success');
    else if (job.state === 'failed')
      this.notify(t('app.job_failed', { what, error: job.error ?? job.message ?? '' }), 'error', undefined, job.error_kind);
    else this.notify(t(job.state === 'cancelled' ? 'app.job_cancelled' : 'app.job_interrupted', { what }), 'info');
    watch.onEnd?.(job);
  }

  handleEvent = (e: Notification) => {
    if (!e || typeof e !== 'object') return;
    if (e.type === 'job' && e.job) this.upsertJob(e.job);
    else if (e.type === 'library_changed') this.scheduleLibraryRefresh();
    for (const fn of this.notificationListeners) fn(e);
  };

  /** Runs `fn` on every notification from the backend; returns the unsubscribe. */
  onNotification(fn: (n: Notification) => void): () => void {
    this.notificationListeners.add(fn);
    return () => this.notificationListeners.delete(fn);
  }

  /** Import dropped files into the currently selected voice. */
  async importPaths(paths: string[]): Promise<number | null> {
    if (paths.length === 0) return null;
    const voiceId = this.voiceFilter;
    try {
      const jobId = await api.importFiles(paths, voiceId);
      const count = paths.length;
      this.watchJob(
        jobId,
        voiceId !== null ? t('app.importing_files_into', { count, voice: this.voiceName(voiceId) }) : t('app.importing_files', { count }),
      );
      return jobId;
    } catch (err) {
      this.reportError(err, t('app.import_failed'));
      return null;
    }
  }

  /** Back to a blank state (tests). */
  reset() {
    player.reset();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (this.libraryTimer) clearTimeout(this.libraryTimer);
    this.libraryTimer = null;
    this.librarySeq++;
    this.watched.clear();
    this.page = 'library';
    this.voices = [];
    this.takes = [];
    this.takesLoaded = false;
    this.libraryLoading = false;
    this.voiceFilter = null;
    this.jobs = [];
    this.jobsLoaded = false;
    this.notices = [];
    this.dragging = false;
  }
}

export const app = new AppState();
