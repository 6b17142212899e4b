/** A bench called wrongly (a flag's value, an unknown name, a missing tool): index.ts prints the message alone and exits 2. */
export class BenchUsageError extends Error {}
