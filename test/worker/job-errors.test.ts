/**
 * What a failure reported by the inference thread (its cause's name and message, as the thread
 * posts them) means for the job: the request's fault fails it, the host's or the code's does not
 * pass for the request's.
 */
import { describe, expect, it } from 'vitest';
import { InferenceRunError } from '../../src/worker/inference-protocol.ts';
import { asJobError, JobInputError } from '../../src/worker/runner.ts';

describe('asJobError', () => {
  it('the pipeline’s own range check fails the job as invalid input', () => {
    const mapped = asJobError(new InferenceRunError('RangeError', 'steps must be an integer in [1, 50], got 60'));
    expect(mapped).toBeInstanceOf(JobInputError);
    expect(mapped).toMatchObject({ code: 'invalid_input', message: 'steps must be an integer in [1, 50], got 60' });
  });

  it('a buffer the host could not allocate is an out-of-memory, not the request’s fault', () => {
    const mapped = asJobError(new InferenceRunError('RangeError', 'Array buffer allocation failed'));
    expect(mapped).toBeInstanceOf(JobInputError);
    expect(mapped).toMatchObject({ code: 'out_of_memory' });
    expect((mapped as Error).message).toMatch(/^the generation does not fit in the worker's memory \(Array buffer allocation failed\)/);
  });

  it('the engine’s other RangeErrors (a stack overflow, a length it refuses) are handed back, not failed as invalid input', () => {
    for (const message of ['Maximum call stack size exceeded', 'Invalid typed array length: -4', 'Invalid array length']) {
      const error = new InferenceRunError('RangeError', message);
      expect(asJobError(error), message).toBe(error);
    }
  });
});
