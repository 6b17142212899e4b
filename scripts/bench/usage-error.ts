/** A bench called wrongly (a flag's value, an unknown name, a missing tool): index.ts prints the message alone and exits 2. */
export class BenchUsageError extends Error {}

/**
 * A count flag's value: decimal digits, at least `min` (and at most `max`). `Number()` alone took
 * 1.5 (a bench then ran 2 jobs and divided by 1.5, or waited for 1.5 to finish), '' and '0x10'.
 */
export function wholeNumber(flag: string, text: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = text !== undefined && /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new BenchUsageError(`--${flag} must be a whole number ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`} (got ${JSON.stringify(text ?? '')})`);
  }
  return value;
}
