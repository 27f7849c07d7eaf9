// Blind ABX trials: X is A or B, drawn at random and hidden until the listener votes.

export interface AbxTrial {
  /** Conversion ids. */
  a: number;
  b: number;
  hidden: number;
}

export interface AbxScore {
  trials: number;
  correct: number;
}

export function drawTrial(a: number, b: number, random: () => number = Math.random): AbxTrial {
  return { a, b, hidden: random() < 0.5 ? a : b };
}

/**
 * The chance of scoring at least `correct` of `trials` by guessing (one-sided binomial, p = 1/2):
 * below 0.05 the listener most likely hears a difference.
 */
export function guessProbability({ trials, correct }: AbxScore): number {
  let p = 0;
  for (let k = correct; k <= trials; k++) p += binomial(trials, k);
  return p / 2 ** trials;
}

function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return c;
}
