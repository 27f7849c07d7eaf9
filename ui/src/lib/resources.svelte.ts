// The system's resources (Svelte 5 runes), polled every POLL_MS while something shows them (the
// Jobs page's strip, the Train page's charts) and the window is visible: one poller for all of
// them, keeping the last HISTORY_MS of snapshots.
import * as api from './api';
import type { ResourceSnapshot } from './api';
import { appendSample, POLL_MS, type ResourceSample } from './resources';

class ResourceMonitor {
  /** Oldest first. */
  history = $state.raw<ResourceSample[]>([]);
  /** Why the last poll failed; null once one succeeds. */
  error = $state<string | null>(null);

  private watchers = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private inFlight = false;
  /** Bumped by reset, so a poll answered after it is dropped. */
  private generation = 0;

  get latest(): ResourceSnapshot | null {
    return this.history.at(-1)?.snapshot ?? null;
  }

  /** Polls while anything watches; returns the function that stops this watch. */
  watch(): () => void {
    if (this.watchers++ === 0) {
      document.addEventListener('visibilitychange', this.followVisibility);
      this.followVisibility();
    }
    let watching = true;
    return () => {
      if (!watching) return;
      watching = false;
      if (--this.watchers === 0) this.stop();
    };
  }

  reset() {
    this.stop();
    this.watchers = 0;
    this.generation++;
    this.inFlight = false;
    this.history = [];
    this.error = null;
  }

  private readonly followVisibility = () => (document.visibilityState === 'hidden' ? this.pause() : this.resume());

  private resume() {
    if (this.timer) return;
    void this.poll();
    this.timer = setInterval(() => void this.poll(), POLL_MS);
  }

  private pause() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private stop() {
    this.pause();
    document.removeEventListener('visibilitychange', this.followVisibility);
  }

  private async poll() {
    if (this.inFlight) return;
    this.inFlight = true;
    const generation = this.generation;
    try {
      const snapshot = await api.resourceSnapshot();
      if (generation !== this.generation) return;
      this.history = appendSample(this.history, { at: Date.now(), snapshot });
      this.error = null;
    } catch (err) {
      if (generation === this.generation) this.error = api.errorMessage(err);
    } finally {
      if (generation === this.generation) this.inFlight = false;
    }
  }
}

export const resources = new ResourceMonitor();
