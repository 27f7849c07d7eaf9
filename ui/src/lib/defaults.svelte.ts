// The backend's defaults for the Convert and Train forms, asked for once at start-up
// (`get_conversion_defaults`, `get_training_defaults`): the UI has no copy of its own.
import * as api from './api';
import type { ConvertOptions, TrainingDefaults } from './api';

export interface Defaults {
  conversion: ConvertOptions;
  training: TrainingDefaults;
}

class BackendDefaults {
  /** null until loaded. */
  loaded = $state<Defaults | null>(null);
  private pending: Promise<Defaults> | null = null;

  /** The defaults, asked for on the first call; a failed load is asked again on the next. */
  load(): Promise<Defaults> {
    this.pending ??= Promise.all([api.conversionDefaults(), api.trainingDefaults()]).then(
      ([conversion, training]) => (this.loaded = { conversion, training }),
      (err) => {
        this.pending = null;
        throw err;
      },
    );
    return this.pending;
  }

  /** Forget them (tests). */
  reset() {
    this.loaded = null;
    this.pending = null;
  }
}

export const defaults = new BackendDefaults();
