// One prediction on screen: its status and per-step progress, live from the SSE stream
// (GET /v1/predictions/{id}/events), or from GET /v1/predictions/{id} every 2 s when the
// stream cannot be had; then its images with their scan badges, the caption, or the error.
import { ApiError, getPrediction, sameOriginFile, streamEvents } from './api.js';

const POLL_MS = 2000;
const TERMINAL = new Set(['executed', 'failed']);

const STATUS_TEXT = {
  queued: 'Waiting for a worker…',
  executing: 'Painting…',
  executed: 'Done.',
  failed: 'It did not work.',
};

export function resultView(elements) {
  const { card, status, message, bar, barText, error, caption, images, idLine } = elements;
  let following;
  let lastProgress = null;
  let polling = false;

  const POLLING_NOTE = 'Live updates unavailable; checking every 2 seconds.';

  function setProgress(step, total) {
    if (total > 0) {
      bar.max = total;
      bar.value = Math.min(step, total);
      bar.setAttribute('aria-valuetext', `step ${Math.min(step, total)} of ${total}`);
      // While polling the step shown is the last one the stream told: say why it stands still.
      barText.textContent = `Step ${Math.min(step, total)} of ${total}${polling ? ` · ${POLLING_NOTE}` : ''}`;
    } else {
      bar.removeAttribute('value');
      bar.removeAttribute('aria-valuetext');
      barText.textContent = polling ? POLLING_NOTE : '';
    }
  }

  function renderImages(record) {
    images.replaceChildren();
    const urls = record.output && typeof record.output === 'object' && Array.isArray(record.output.images) ? record.output.images : [];
    const verdicts = Array.isArray(record.isScanables) ? record.isScanables : [];
    const robustness = record.output && typeof record.output === 'object' && Array.isArray(record.output.scanRobustness) ? record.output.scanRobustness : [];
    urls.forEach((imageUrl, i) => {
      const local = sameOriginFile(imageUrl);
      const figure = document.createElement('figure');
      figure.className = 'result-image';
      const img = document.createElement('img');
      img.src = local;
      img.alt = `result ${i + 1} of ${urls.length}`;
      img.loading = 'lazy';
      const bar = document.createElement('figcaption');
      if (typeof verdicts[i] === 'boolean') {
        const badge = document.createElement('span');
        badge.className = `badge ${verdicts[i] ? 'scans' : 'may-not-scan'}`;
        badge.textContent = verdicts[i] ? 'scans' : 'may not scan';
        badge.title = verdicts[i] ? 'Our scanners read the code in this image.' : 'Our scanners could not read the code: test it with your phone before printing.';
        bar.append(badge);
      }
      if (typeof robustness[i] === 'number') {
        // How much margin the code has: the share of simulated phone photos our scanners read.
        const share = document.createElement('span');
        share.className = 'robustness';
        share.textContent = `${Math.round(robustness[i] * 100)}% of test photos`;
        share.title = 'Share of simulated phone photos of this image (sizes, angles, blur, light, JPEG) that our scanners read.';
        bar.append(share);
      }
      const link = document.createElement('a');
      link.href = local;
      link.download = `qr-art-${record.id.slice(0, 8)}-${i + 1}.png`;
      link.textContent = 'Download';
      link.className = 'download';
      bar.append(link);
      figure.append(img, bar);
      images.append(figure);
    });
  }

  function render(record) {
    // Finished: nothing more to follow, so no note about how it is followed.
    if (TERMINAL.has(record.status)) polling = false;
    card.hidden = false;
    card.dataset.status = record.status;
    // The status line is a live region: a screen reader hears each change, and with "Done." what
    // came of it. Written only when its words change: polling renders the same record every 2 s,
    // and each rewrite would be announced again.
    setText(status, record.status);
    if (status.className !== `chip ${record.status}`) status.className = `chip ${record.status}`;
    setText(message, record.status === 'executed' ? `${STATUS_TEXT.executed} ${resultSummary(record)}` : (STATUS_TEXT[record.status] ?? ''));
    idLine.textContent = `Prediction ${record.id} · ${record.input?.workflow ?? ''} · ${Number(record.credits ?? 0).toFixed(2)} credits${record.refunded ? ' (refunded)' : ''}`;
    if (record.status === 'executed' && lastProgress) setProgress(lastProgress.total, lastProgress.total);
    else if (record.status === 'executed') {
      // Opened after the fact: no steps to tell, only that it is finished.
      bar.max = 1;
      bar.value = 1;
      bar.setAttribute('aria-valuetext', 'finished');
      barText.textContent = 'Finished';
    }
    else if (record.status === 'failed') {
      // A determinate, empty bar: an indeterminate one would still look at work.
      bar.max = 1;
      bar.value = 0;
      bar.setAttribute('aria-valuetext', 'stopped');
      barText.textContent = '';
    }
    // Executing: the last step heard, redrawn so that a line about a lost connection goes once the service answers again.
    else if (record.status === 'executing' && lastProgress) setProgress(lastProgress.step, lastProgress.total);
    else setProgress(0, 0);
    if (record.status === 'failed' || (typeof record.output === 'string' && record.output)) {
      error.textContent = record.error?.message ?? (typeof record.output === 'string' && record.output ? record.output : 'The prediction failed.');
      error.hidden = false;
    } else {
      error.hidden = true;
    }
    const text = record.output && typeof record.output === 'object' ? record.output.caption : undefined;
    caption.hidden = !text;
    caption.textContent = text ? `Caption used as the prompt: “${text}”` : '';
    renderImages(record);
  }

  /**
   * Asks every 2 s until the prediction ends ('done'), or until the service answers again after
   * it could not be reached ('back': its event stream is worth another try).
   */
  async function poll(key, id, signal, onChange) {
    let unreachable = false;
    for (;;) {
      if (signal.aborted) return 'done';
      try {
        const record = await getPrediction(key, id, signal);
        onChange(record);
        if (TERMINAL.has(record.status)) return 'done';
        if (unreachable) return 'back';
      } catch (e) {
        if (signal.aborted) return 'done';
        if (e instanceof ApiError && (e.status === 401 || e.status === 404)) throw e;
        unreachable = true;
        // In the status line (a live region), so a screen reader hears it too; the next record
        // heard puts the status's own words back.
        setText(message, `Could not reach the service (${e.message}); trying again…`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  return {
    /** Shows a record and, unless it has finished, follows it until it does. */
    async follow(key, record, { onChange } = {}) {
      following?.abort();
      const controller = new AbortController();
      following = controller;
      lastProgress = null;
      polling = false;
      card.dataset.updates = 'stream';
      const changed = (next) => {
        if (controller.signal.aborted) return;
        render(next);
        onChange?.(next);
      };
      changed(record);
      card.scrollIntoView({ behavior: 'smooth', block: 'start' });
      if (TERMINAL.has(record.status)) return;
      let last = record;
      for (;;) {
        card.dataset.updates = 'stream';
        polling = false;
        if (lastProgress) setProgress(lastProgress.step, lastProgress.total);
        try {
          await streamEvents(key, record.id, {
            signal: controller.signal,
            onPrediction: (next) => {
              last = next;
              changed(next);
            },
            onProgress: ({ step, total }) => {
              if (controller.signal.aborted || TERMINAL.has(last.status)) return;
              lastProgress = { step, total };
              setProgress(step, total);
            },
          });
          if (TERMINAL.has(last.status) || controller.signal.aborted) return;
        } catch (e) {
          if (controller.signal.aborted) return;
          if (e instanceof ApiError && (e.status === 401 || e.status === 404)) {
            error.textContent = e.message;
            error.hidden = false;
            return;
          }
        }
        // The stream failed or ended early: ask every 2 s instead, and open it again once a
        // service that could not be reached answers again.
        card.dataset.updates = 'polling';
        polling = true;
        if (lastProgress) setProgress(lastProgress.step, lastProgress.total);
        else setProgress(0, 0);
        try {
          const outcome = await poll(key, record.id, controller.signal, (next) => {
            last = next;
            changed(next);
          });
          if (outcome === 'done') return;
        } catch (e) {
          error.textContent = e.message;
          error.hidden = false;
          return;
        }
      }
    },
    stop() {
      following?.abort();
    },
  };
}

/** What a finished prediction gave, in words: how many images, and how many of them scan. */
function resultSummary(record) {
  const count = record.output && typeof record.output === 'object' && Array.isArray(record.output.images) ? record.output.images.length : 0;
  if (count === 0) return '';
  const images = `${count} image${count === 1 ? '' : 's'}`;
  // An outpainting carries no code: its isScanables is empty, not a verdict of "none scan".
  if (!Array.isArray(record.isScanables) || record.isScanables.length !== count) return `${images}.`;
  const scanning = record.isScanables.filter((v) => v === true).length;
  return `${images}, ${scanning === count ? (count === 1 ? 'it scans' : 'all scan') : `${scanning} of ${count} scan`}.`;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}
