// The theme: chosen on the Settings page, saved with the other saved parameters, and applied as
// `data-theme` on the document element, which picks the palette in app.css.
import { savedAppearance, type Theme } from './savedParams.svelte';

const SYSTEM_LIGHT = '(prefers-color-scheme: light)';

class AppearanceState {
  theme = $state<Theme>('system');
  private systemScheme: MediaQueryList | null = null;

  /** The saved theme, applied; at start-up, before the first paint. */
  restore(): void {
    this.theme = savedAppearance.restore({ theme: 'system' }).theme;
    this.apply();
  }

  choose(theme: Theme): void {
    this.theme = theme;
    savedAppearance.save({ theme });
    this.apply();
  }

  private apply(): void {
    if (this.theme === 'system') this.followSystem();
    document.documentElement.dataset.theme = this.theme === 'system' ? this.systemTheme() : this.theme;
  }

  private systemTheme(): 'light' | 'dark' {
    return this.systemScheme?.matches ? 'light' : 'dark';
  }

  /** Listens for the desktop switching between light and dark, once. */
  private followSystem(): void {
    // jsdom, and webviews too old to tell, have no matchMedia: dark, the app's own palette.
    if (this.systemScheme || typeof window.matchMedia !== 'function') return;
    this.systemScheme = window.matchMedia(SYSTEM_LIGHT);
    this.systemScheme.addEventListener('change', () => {
      if (this.theme === 'system') this.apply();
    });
  }

  /** Back to a blank state (tests). */
  reset(): void {
    this.theme = 'system';
    this.systemScheme = null;
    delete document.documentElement.dataset.theme;
  }
}

export const appearance = new AppearanceState();
