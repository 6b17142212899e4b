// Live feedback while the form changes: the QR layout (POST /v1/qr/preview, v4 and v5
// families), the outpainting canvas (drawn here), and the price (POST /v1/predictions/quote).
// Calls are debounced and the previous one is cancelled, so typing costs a few requests.
import { ApiError, preview, quote } from './api.js';
import { syncFieldErrors } from './form.js';

const DEBOUNCE_MS = 350;
/** How soon a preview the service could not give (away, or a 5xx without Retry-After) is tried again. */
const RETRY_MS = 5000;
/** The create fields the preview fills in when blank (POST /v1/qr/preview previews a layout): it never judges them. */
const FILLED_BY_PREVIEW = ['prompt', 'qrText'];
const blank = (value) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/**
 * @param {object} o
 * @param {() => {workflow: string, schema: object, body: object, unreadable: string[]}} o.current  what the form says now
 * @param {() => Set<string>} o.visibleErrors  fields whose live errors may be shown (touched ones)
 */
export function livePreview({ box, image, note, cost, fields, current, visibleErrors }) {
  let timer;
  let inFlight;
  let blobUrl;
  let generation = 0;
  /** Workflows the server says have no drawn layout. */
  const noLayout = new Set();
  const outpaintFrame = document.createElement('div');
  outpaintFrame.className = 'outpaint-frame';
  const outpaintPicture = document.createElement('div');
  outpaintPicture.className = 'outpaint-picture';
  outpaintPicture.textContent = 'your picture';
  outpaintFrame.append(outpaintPicture);

  const hasLayout = (workflow, schema) => !!schema.properties?.qrContent && !noLayout.has(workflow);

  /** The price line is a live region: while a new price is on its way it is busy, so "…" is not announced. */
  const costLine = cost.closest('[aria-live]') ?? cost;

  function showCost(credits) {
    setCostText(typeof credits === 'number' && Number.isFinite(credits) ? `${credits.toFixed(2)} credits` : '–');
  }

  function setCostText(text) {
    cost.textContent = text;
    costLine.removeAttribute('aria-busy');
  }

  function setImage(url) {
    if (blobUrl) URL.revokeObjectURL(blobUrl);
    blobUrl = url;
    if (url) image.src = url;
    else image.removeAttribute('src');
    image.hidden = !url;
  }

  /**
   * After a layout comes back: the allowed range of qrX / qrY for this size (the code's square,
   * quiet zone included, is qrRatio of the short side and must stay inside the picture) and
   * where "centred" puts it.
   */
  function describeLayout(layout, body, schema) {
    if (!layout) return 'The black-and-white code as the model will see it.';
    const ratio = body.qrRatio ?? schema.properties?.qrRatio?.default;
    const square = typeof layout.side === 'number' ? layout.side : typeof ratio === 'number' ? Math.round(ratio * Math.min(layout.width, layout.height)) : undefined;
    for (const [name, size, at] of [
      ['qrX', layout.width, layout.x],
      ['qrY', layout.height, layout.y],
    ]) {
      const input = fields.querySelector(`[name="${name}"]`);
      if (!input || square === undefined) continue;
      const max = Math.max(0, size - square);
      input.max = String(max);
      input.placeholder = `centred (${at})`;
      const help = fields.querySelector(`#help-${name}`);
      if (help) help.textContent = `0 to ${max} px for this shape and size; empty = centred.`;
    }
    const place = typeof layout.x === 'number' && typeof layout.y === 'number' ? ` at (${layout.x}, ${layout.y})` : '';
    return `Picture ${layout.width} × ${layout.height} px · code square ${square ?? layout.codeSide} px${place} · QR version ${layout.version}.`;
  }

  function drawOutpaint(body) {
    const n = (v) => (Number.isFinite(v) ? v : 0);
    const w = n(body.image_width);
    const h = n(body.image_height);
    if (!(w > 0 && h > 0)) {
      outpaintFrame.hidden = true;
      return 'Give the size of your picture and what to add around it.';
    }
    const total = { w: w + n(body.padding_left) + n(body.padding_right), h: h + n(body.padding_top) + n(body.padding_bottom) };
    const scale = 100 / Math.max(total.w, total.h);
    outpaintFrame.hidden = false;
    outpaintFrame.style.width = `${total.w * scale}%`;
    outpaintFrame.style.aspectRatio = `${total.w} / ${total.h}`;
    outpaintPicture.style.left = `${(n(body.padding_left) / total.w) * 100}%`;
    outpaintPicture.style.top = `${(n(body.padding_top) / total.h) * 100}%`;
    outpaintPicture.style.width = `${(w / total.w) * 100}%`;
    outpaintPicture.style.height = `${(h / total.h) * 100}%`;
    return `Final picture: ${total.w} × ${total.h} px (yours in the middle, the grey part is painted).`;
  }

  /** Field errors from a live check: only beside fields the user has touched; never a banner. */
  function showLiveErrors(error) {
    const messages = new Map();
    if (error instanceof ApiError && error.status === 400) {
      const visible = visibleErrors();
      for (const detail of error.details) {
        if (!detail.field || !visible.has(detail.field)) continue;
        const message = detail.message ?? error.message;
        messages.set(detail.field, messages.has(detail.field) ? `${messages.get(detail.field)} ${message}` : message);
      }
    }
    syncFieldErrors(fields, messages);
  }

  /** A live check's error that belongs to no field (an outpainted canvas too large): said in the note, or it would go unsaid until Create. */
  function generalError(error) {
    if (!(error instanceof ApiError) || error.status !== 400) return undefined;
    const detail = error.details.find((d) => !d.field);
    return detail ? (detail.message ?? error.message) : undefined;
  }

  async function run() {
    const mine = ++generation;
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    const { workflow, schema, body, unreadable } = current();
    if (!workflow || !schema) return;
    // A number the browser cannot read is left out of the body: a preview of it would show the
    // default's layout and price, and clear the field's "Enter a number." Wait for a number.
    if (unreadable.length > 0) {
      showCost(undefined);
      // The other fields' errors were about values since changed.
      syncFieldErrors(fields, new Map(), new Set(unreadable));
      note.textContent = `Enter a number in ${unreadable.join(', ')} to update the preview.`;
      return;
    }
    const layout = hasLayout(workflow, schema);
    const outpaint = workflow === 'outpainting';
    box.hidden = !layout && !outpaint;
    if (outpaint) {
      box.querySelector('h3').textContent = 'Canvas';
      setImage(null);
      if (!outpaintFrame.isConnected) image.after(outpaintFrame);
      note.textContent = drawOutpaint(body);
    } else {
      box.querySelector('h3').textContent = 'Layout preview';
      outpaintFrame.remove();
    }
    try {
      if (layout && body.qrContent) {
        box.classList.add('loading');
        const result = await preview(body, controller.signal);
        if (mine !== generation) return URL.revokeObjectURL(result.blobUrl);
        setImage(result.blobUrl);
        note.textContent = describeLayout(result.layout, body, schema);
        // A blank prompt was previewed as if filled: Create's "prompt is required" still holds.
        syncFieldErrors(fields, new Map(), new Set(FILLED_BY_PREVIEW.filter((name) => blank(body[name]))));
        if (result.credits !== null) return showCost(result.credits);
      } else if (layout) {
        setImage(null);
        note.textContent = 'Type what the code opens to see where it goes.';
      }
      const quoted = await quote(body, controller.signal);
      if (mine !== generation) return;
      syncFieldErrors(fields, new Map());
      showCost(quoted.credits);
    } catch (error) {
      if (controller.signal.aborted || mine !== generation) return;
      if (error instanceof ApiError && error.status === 400 && error.details.some((d) => d.rule === 'workflow_has_preview')) {
        noLayout.add(workflow);
        return run();
      }
      if (error instanceof ApiError && error.status === 429) {
        const wait = error.retryAfter ?? 5;
        // The last price shown may be for fields since changed: none rather than a wrong one.
        // Said beside the price too: v1-v3b have no preview box to say it in.
        setCostText(`– (price check paused for ${wait} s)`);
        note.textContent = `Preview paused for ${wait} s (many changes in a short time).`;
        clearTimeout(timer);
        timer = setTimeout(run, wait * 1000);
        return;
      }
      showCost(undefined);
      // The service away or failing says nothing about the fields: said as such, and tried again.
      if (!(error instanceof ApiError) || error.status >= 500) {
        const wait = error instanceof ApiError && error.retryAfter ? error.retryAfter * 1000 : RETRY_MS;
        note.textContent = `Preview unavailable (${error.message}); trying again in ${Math.round(wait / 1000)} s.`;
        // One retry at a time: a newer edit's pause may be pending, and would start a second chain.
        clearTimeout(timer);
        timer = setTimeout(run, wait);
        return;
      }
      showLiveErrors(error);
      const general = generalError(error);
      if (general) note.textContent = general;
      else if (error.status !== 400) note.textContent = `Preview unavailable: ${error.message}`;
      else if (layout && body.qrContent) note.textContent = 'Fix the fields marked in red to update the preview.';
    } finally {
      if (mine === generation) box.classList.remove('loading');
    }
  }

  return {
    /** The form changed: check again after a short pause. */
    schedule() {
      clearTimeout(timer);
      // The price shown is for the form before this change: none until the new one is known,
      // so that Create is never pressed beside a price it will not charge. Shorter than a price,
      // so nothing moves: a Create button that moved under a click (its blur schedules this) would miss it.
      cost.textContent = '…';
      costLine.setAttribute('aria-busy', 'true');
      timer = setTimeout(run, DEBOUNCE_MS);
    },
    /** Check now (a new workflow was picked). */
    now() {
      clearTimeout(timer);
      void run();
    },
  };
}
