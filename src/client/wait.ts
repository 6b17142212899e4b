/**
 * Waiting for a prediction to finish: follow its event stream (status and step progress as
 * they happen), and poll GET /v1/predictions/{id} where there is no stream (an older server, a
 * proxy that buffers or refuses it) or it keeps breaking.
 */
import { EventStreamUnavailableError, predictionEvents } from './events.ts';
import { QrArtApiError, QrArtConnectionError, sleep, type Transport } from './http.ts';
import { getPrediction } from './predictions.ts';
import { isTerminalStatus, type PredictionRecord, type PredictionStatus, type Progress } from './schemas.ts';

export interface WaitOptions {
  /** Denoising steps done over all steps of the job; only the event stream reports them. */
  onProgress?: (progress: Progress) => void;
  /** Called with the record each time its status is new to this wait (the first record too). */
  onStatus?: (record: PredictionRecord) => void;
  /** Stops the wait: it rejects with the signal's reason (AbortSignal.timeout(ms) for a deadline). */
  signal?: AbortSignal;
  /** Between two GETs when polling; default 1000 ms. */
  pollIntervalMs?: number;
  /** false: poll only, never open the event stream. Default true. */
  stream?: boolean;
  /** A stream silent this long counts as broken and is reopened; default 45 s (the server sends a keep-alive every 15 s). */
  streamIdleTimeoutMs?: number;
  /**
   * Called when a poll finds the API away (past the transport's retries) with what it got, and
   * with null when the API answers again; the wait goes on meanwhile.
   */
  onApiAway?: (error: Error | null) => void;
}

/** Streams that end or break before the final record, in a row, before the wait polls for good. */
const MAX_STREAM_FAILURES = 3;
/** Pause before reconnecting a stream that ended early. */
const RECONNECT_DELAY_MS = 500;
/** Statuses in the order a prediction goes through them (the two final ones last). */
const STATUS_RANK: Readonly<Record<PredictionStatus, number>> = { queued: 0, executing: 1, executed: 2, failed: 2 };

/** Resolves with the record once it is executed or failed (a failed prediction resolves too: check record.status). */
export async function waitForPrediction(http: Transport, id: string, options: WaitOptions = {}): Promise<PredictionRecord> {
  const { signal } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  let lastStatus: PredictionStatus | undefined;
  /** Reports a new status; returns the record when it is final. */
  const observe = (record: PredictionRecord): PredictionRecord | null => {
    // A replica whose read cache is a moment behind may still say queued after executing: a wait only goes forward.
    if (lastStatus !== undefined && STATUS_RANK[record.status] < STATUS_RANK[lastStatus]) return null;
    if (record.status !== lastStatus) {
      lastStatus = record.status;
      options.onStatus?.(record);
    }
    return isTerminalStatus(record.status) ? record : null;
  };

  // The stream is given up for good when the server has none (or refuses this key one), and
  // until the API is back when it broke MAX_STREAM_FAILURES times in a row.
  let streamRefused = options.stream === false;
  let streamFailures = 0;
  let away = false;
  const useStream = () => !streamRefused && streamFailures < MAX_STREAM_FAILURES;
  for (;;) {
    if (useStream()) {
      try {
        for await (const event of predictionEvents(http, id, { signal, idleTimeoutMs: options.streamIdleTimeoutMs })) {
          if (event.type === 'progress') {
            options.onProgress?.(event.progress);
            continue;
          }
          streamFailures = 0;
          const final = observe(event.record);
          if (final) return final;
        }
        // Ended before the final record: a replica restarting, a proxy's idle timeout.
        streamFailures++;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof EventStreamUnavailableError) streamRefused = true;
        // A stream whose events make no sense: the plain record is still readable.
        else if (error instanceof QrArtApiError && error.code === 'invalid_response') streamRefused = true;
        // The key holds as many streams as the server allows (EVENT_STREAMS_PER_KEY): poll this one.
        else if (error instanceof QrArtApiError && error.status === 429) streamRefused = true;
        else if (error instanceof QrArtConnectionError || (error instanceof QrArtApiError && error.status >= 500)) streamFailures++;
        // 401 and the like: polling would be refused the same way.
        else throw error;
      }
    }
    // The record itself: between two streams (it may have finished meanwhile), or all along.
    let record: PredictionRecord;
    try {
      record = await getPrediction(http, id, { signal });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      // The API is away for longer than the transport's retries (a restart, a database failover):
      // the prediction goes on, and so does the wait; only the caller's signal ends it.
      const apiAway = error instanceof QrArtConnectionError || (error instanceof QrArtApiError && (error.status >= 500 || error.status === 429));
      if (!apiAway) throw error;
      if (!away) options.onApiAway?.(error);
      away = true;
      const retryAfterMs = error instanceof QrArtApiError && error.retryAfter !== null ? error.retryAfter * 1000 : 0;
      await sleep(Math.max(pollIntervalMs, retryAfterMs), signal);
      continue;
    }
    if (away) {
      // Back: the breaks were the outage's, not the stream's; it is worth opening again.
      away = false;
      streamFailures = 0;
      options.onApiAway?.(null);
    }
    const final = observe(record);
    if (final) return final;
    await sleep(useStream() ? RECONNECT_DELAY_MS : pollIntervalMs, signal);
  }
}
