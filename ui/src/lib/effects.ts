// The effects chain the Convert page edits: the catalogue of effects with their parameters'
// defaults and ranges (as timbre-audio's `effects` module states them), and the chain's edits.
import type { Effect, EffectChain } from './api';
import { formatNumber, t, type MessageKey } from './i18n.svelte';

export type EffectName = Effect['effect'];

export interface ParamSpec {
  key: string;
  /** Shown as `t(label)`. */
  label: MessageKey;
  unit: string;
  min: number;
  max: number;
  step: number;
  default: number;
}

const p = (key: string, label: MessageKey, unit: string, min: number, max: number, step: number, def: number): ParamSpec => ({
  key,
  label,
  unit,
  min,
  max,
  step,
  default: def,
});

/** Every effect, in the order the picker offers them, with its parameters. */
export const EFFECTS: { name: EffectName; label: MessageKey; params: ParamSpec[] }[] = [
  { name: 'gain', label: 'convert.effect_gain', params: [p('db', 'convert.param_gain', 'dB', -60, 40, 0.5, 0)] },
  { name: 'high_pass', label: 'convert.effect_high_pass', params: [p('cutoff_hz', 'convert.param_cutoff', 'Hz', 10, 20000, 10, 80)] },
  {
    name: 'low_pass',
    label: 'convert.effect_low_pass',
    params: [p('cutoff_hz', 'convert.param_cutoff', 'Hz', 20, 40000, 100, 12000), p('q', 'convert.param_q', '', 0.1, 20, 0.05, Math.SQRT1_2)],
  },
  {
    name: 'peaking_eq',
    label: 'convert.effect_peaking_eq',
    params: [
      p('frequency_hz', 'convert.param_frequency', 'Hz', 20, 40000, 10, 3000),
      p('gain_db', 'convert.param_gain', 'dB', -30, 30, 0.5, 3),
      p('q', 'convert.param_q', '', 0.1, 20, 0.05, 1),
    ],
  },
  {
    name: 'compressor',
    label: 'convert.effect_compressor',
    params: [
      p('threshold_db', 'convert.param_threshold', 'dB', -80, 0, 1, -18),
      p('ratio', 'convert.param_ratio', ':1', 1, 100, 0.5, 3),
      p('knee_db', 'convert.param_knee', 'dB', 0, 24, 1, 0),
      p('attack_ms', 'convert.param_attack', 'ms', 0, 1000, 1, 10),
      p('release_ms', 'convert.param_release', 'ms', 1, 5000, 10, 120),
      p('makeup_db', 'convert.param_makeup', 'dB', -24, 40, 0.5, 0),
    ],
  },
  {
    name: 'de_esser',
    label: 'convert.effect_de_esser',
    params: [
      p('frequency_hz', 'convert.param_from', 'Hz', 1000, 20000, 100, 6000),
      p('threshold_db', 'convert.param_threshold', 'dB', -80, 0, 1, -30),
      p('ratio', 'convert.param_ratio', ':1', 1, 100, 0.5, 4),
    ],
  },
  {
    name: 'delay',
    label: 'convert.effect_delay',
    params: [
      p('time_ms', 'convert.param_time', 'ms', 1, 5000, 10, 250),
      p('feedback', 'convert.param_feedback', '', 0, 0.95, 0.05, 0.3),
      p('mix', 'convert.param_mix', '', 0, 1, 0.05, 0.25),
    ],
  },
  {
    name: 'chorus',
    label: 'convert.effect_chorus',
    params: [
      p('rate_hz', 'convert.param_rate', 'Hz', 0.01, 20, 0.1, 1.2),
      p('depth_ms', 'convert.param_depth', 'ms', 0, 20, 0.5, 2),
      p('delay_ms', 'convert.param_delay', 'ms', 1, 100, 1, 15),
      p('mix', 'convert.param_mix', '', 0, 1, 0.05, 0.4),
    ],
  },
  {
    name: 'reverb',
    label: 'convert.effect_reverb',
    params: [
      p('decay_seconds', 'convert.param_decay', 's', 0.1, 30, 0.1, 1.5),
      p('pre_delay_ms', 'convert.param_pre_delay', 'ms', 0, 500, 5, 20),
      p('damping', 'convert.param_damping', '', 0, 0.99, 0.05, 0.3),
      p('mix', 'convert.param_mix', '', 0, 1, 0.05, 0.25),
    ],
  },
  { name: 'limiter', label: 'convert.effect_limiter', params: [p('ceiling_db', 'convert.param_ceiling', 'dBTP', -40, 0, 0.5, -1)] },
];

export function specOf(name: EffectName) {
  const spec = EFFECTS.find((e) => e.name === name);
  if (!spec) throw new Error(`unknown effect ${name}`);
  return spec;
}

/** The effect with its default parameters. */
export function newEffect(name: EffectName): Effect {
  const params = Object.fromEntries(specOf(name).params.map((s) => [s.key, s.default]));
  return { effect: name, ...params } as Effect;
}

export const withEffect = (chain: EffectChain, name: EffectName): EffectChain => ({
  effects: [...chain.effects, newEffect(name)],
});

export const withoutEffect = (chain: EffectChain, index: number): EffectChain => ({
  effects: chain.effects.filter((_, i) => i !== index),
});

/** The chain with the effect at `index` moved by `delta` places (kept within the chain). */
export function moved(chain: EffectChain, index: number, delta: number): EffectChain {
  const to = Math.max(0, Math.min(chain.effects.length - 1, index + delta));
  const effects = [...chain.effects];
  const [effect] = effects.splice(index, 1);
  effects.splice(to, 0, effect);
  return { effects };
}

export function withParam(chain: EffectChain, index: number, key: string, value: number): EffectChain {
  return {
    effects: chain.effects.map((e, i) => (i === index ? ({ ...e, [key]: value } as Effect) : e)),
  };
}

/** What the backend would refuse, in the UI's language: "effect 2 (delay): feedback must be …". */
export function problems(chain: EffectChain): string[] {
  return chain.effects.flatMap((effect, i) =>
    specOf(effect.effect).params.flatMap((s) => {
      const value = (effect as unknown as Record<string, number>)[s.key];
      return Number.isFinite(value) && value >= s.min && value <= s.max
        ? []
        : [
            t('convert.effect_problem', {
              index: formatNumber(i + 1),
              effect: effect.effect,
              param: s.key,
              min: plainNumber(s.min),
              max: plainNumber(s.max),
              value: plainNumber(value),
            }),
          ];
    }),
  );
}

/** A number as the user typed it, in the UI's language (no grouping: 20000, not 20,000). */
function plainNumber(n: number): string {
  return formatNumber(n, { useGrouping: false, maximumFractionDigits: 10 });
}

/** What a conversion is sent: no chain when it has no effects. */
export const chainToSend = (chain: EffectChain): EffectChain | null => (chain.effects.length ? chain : null);
