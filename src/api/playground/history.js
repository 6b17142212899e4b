// The user's past predictions, newest first, a page at a time (GET /v1/predictions?limit&offset).
import { ApiError, listPredictions, sameOriginFile } from './api.js';

const PAGE_SIZE = 5;

export function historyView({ list, note, prev, next, pageLabel, onOpen, onError }) {
  let offset = 0;
  let key = '';
  /** Only the latest load may draw: an older answer arriving late is dropped. */
  let latest = 0;

  function item(doc) {
    const li = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'history-item';
    button.dataset.id = doc.id;
    const firstImage = doc.output && typeof doc.output === 'object' && Array.isArray(doc.output.images) ? doc.output.images[0] : undefined;
    if (firstImage) {
      const thumb = document.createElement('img');
      thumb.src = sameOriginFile(firstImage);
      thumb.alt = '';
      thumb.loading = 'lazy';
      button.append(thumb);
    } else {
      const blank = document.createElement('span');
      blank.className = 'thumb-blank';
      blank.textContent = doc.status === 'failed' ? '×' : '…';
      button.append(blank);
    }
    const text = document.createElement('span');
    text.className = 'history-text';
    const title = document.createElement('strong');
    title.textContent = doc.input?.prompt ?? doc.input?.qrText ?? doc.input?.image ?? doc.id;
    const meta = document.createElement('small');
    const when = doc.completedAt ?? doc.startedAt;
    meta.textContent = `${(doc.input?.workflow ?? '').replace('generate_qr_art', 'qr art')} · ${Number(doc.credits ?? 0).toFixed(2)} credits${doc.refunded ? ' (refunded)' : ''}${when ? ` · ${new Date(when).toLocaleString()}` : ''}`;
    text.append(title, meta);
    const chip = document.createElement('span');
    chip.className = `chip ${doc.status}`;
    chip.textContent = doc.status;
    button.append(text, chip);
    button.addEventListener('click', () => onOpen(doc));
    li.append(button);
    return li;
  }

  async function load() {
    const mine = ++latest;
    if (!key) {
      list.replaceChildren();
      note.textContent = 'Enter your key to see what you made.';
      prev.disabled = next.disabled = true;
      pageLabel.textContent = '';
      return;
    }
    try {
      const page = await listPredictions(key, PAGE_SIZE, offset);
      if (mine !== latest) return;
      // Redrawing the list (a status changed) must not drop the keyboard's place in it.
      const focusedId = list.contains(document.activeElement) ? document.activeElement.dataset.id : undefined;
      list.replaceChildren(...page.docs.map(item));
      if (focusedId) list.querySelector(`[data-id="${CSS.escape(focusedId)}"]`)?.focus();
      note.textContent = page.totalDocs === 0 ? 'Nothing yet: your predictions will appear here.' : `${page.totalDocs} in all. Tap one to open it.`;
      prev.disabled = !page.hasPrevPage;
      next.disabled = !page.hasNextPage;
      pageLabel.textContent = `page ${page.page} of ${page.totalPages}`;
      onError(null);
    } catch (error) {
      if (mine !== latest) return;
      list.replaceChildren();
      prev.disabled = next.disabled = true;
      pageLabel.textContent = '';
      // A service that says when to come back (503, 429) is asked again then.
      const retryAfter = error instanceof ApiError && (error.status === 503 || error.status === 429) ? (error.retryAfter ?? 5) : null;
      note.textContent = `Could not load your predictions: ${error.message}${retryAfter === null ? '' : ` Trying again in ${retryAfter} s.`}`;
      if (retryAfter !== null) setTimeout(() => mine === latest && void load(), retryAfter * 1000);
      onError(error);
    }
  }

  prev.addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE_SIZE);
    void load();
  });
  next.addEventListener('click', () => {
    offset += PAGE_SIZE;
    void load();
  });

  return {
    /** A new key: back to the first page. */
    setKey(newKey) {
      key = newKey;
      offset = 0;
      return load();
    },
    /** Something changed (a new prediction, a status): reload the page shown. */
    refresh: () => load(),
    /** A line under the list (why an item could not be opened). */
    notice(text) {
      note.textContent = text;
    },
  };
}
