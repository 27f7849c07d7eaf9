// The backend's defaults for the Convert and Train forms and the ranges of the voice and live
// controls, asked for once at start-up (`get_conversion_defaults`, `get_training_defaults`,
// `get_parameter_ranges`): the UI has no copy of its own.
import * as api from './api';
import type { ConvertOptions, ParameterRanges, TrainingDefaults } from './api';

export interface Defaults {
  conversion: ConvertOptions;
  training: TrainingDefaults;
  ranges: ParameterRanges;
}

class BackendDefaults {
  /** null until loaded. */
  loaded = $state<Defaults | null>(null);
  private pending: Promise<Defaults> | null = null;

  /** The defaults, asked for on the first call; a failed load is asked again on the next. */
  load(): Promise<Defaults> {
    this.pending ??= Promise.all([api.conversionDefaults(), api.trainingDefaults(), api.parameterRanges()]).then(
      ([conversion, training, ranges]) => (this.loaded = { conversion, training, ranges }),
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
