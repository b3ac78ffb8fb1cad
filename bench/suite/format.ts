/**
 * Number formatting shared by the bench's console lines, tables and notes:
 * one place decides how a missing figure looks ("–").
 */

/** `n` with `digits` decimals, or "–" when missing or not finite. */
export const fmt = (n: number | undefined, digits: number): string => (n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(digits));

/** A ratio as "1.23×", or "–" when missing or not finite. */
export const ratioText = (r: number | undefined): string => (r === undefined || !Number.isFinite(r) ? '–' : `${r.toFixed(2)}×`);

/** Arithmetic mean (NaN for an empty list). */
export const mean = (xs: number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, x) => a + x, 0) / xs.length);

/** KiB → MiB. */
export const mib = (kb: number): number => kb / 1024;
