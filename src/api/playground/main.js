// Wires the page together: the key, the workflow picker and its form, the live preview and
// price, create, the result being followed, and the history.
import { ApiError, createPrediction, getPrediction, openApi, storedKey, storeKey } from './api.js';
import { clearErrors, fieldValues, readBody, renderFields, showApiError, showFieldError, workflowNote, workflowSchemas } from './form.js';
import { historyView } from './history.js';
import { livePreview } from './preview.js';
import { resultView } from './progress.js';

const $ = (id) => document.getElementById(id);
const DEFAULT_WORKFLOW = 'generate_qr_art_v5';

const keyInput = $('api-key');
const keyError = $('error-x-api-key');
const form = $('create-form');
const fields = $('fields-area');
const workflowSelect = $('workflow');
const banner = $('form-error');
const createButton = $('create-button');

let schemas = {};
const recall = (name) => {
  try {
    return localStorage.getItem(name);
  } catch {
    return null;
  }
};
const remember = (name, value) => {
  try {
    localStorage.setItem(name, value);
  } catch {
    /* storage disabled */
  }
};
let touched = new Set();
let submitted = false;
/** The create being tried ({ key, body, idempotencyKey }) until it is answered with a prediction. */
let pendingCreate = null;

/** 128 random bits as hex: getRandomValues works on plain http too, where crypto.randomUUID does not exist. */
function newIdempotencyKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

// ---- the key -------------------------------------------------------------------------------

const currentKey = () => keyInput.value.trim();

/**
 * Why the key cannot be sent, or undefined. A header carries visible ASCII only, so a key pasted
 * with a typographic dash or a non-breaking space would make fetch throw, which reads as an outage.
 */
function keyProblem(key) {
  const odd = [...key].find((c) => c < '!' || c > '~');
  if (odd === undefined) return undefined;
  const code = odd.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
  return `The key holds a character that no key has (U+${code}${odd.trim() ? ` "${odd}"` : ', a space'}): keys are ASCII letters, digits and punctuation. Paste it again from where you keep it.`;
}

function showKeyError(message) {
  keyError.textContent = message ?? '';
  keyError.hidden = !message;
  if (message) keyInput.setAttribute('aria-invalid', 'true');
  else keyInput.removeAttribute('aria-invalid');
}

const history = historyView({
  list: $('history-list'),
  note: $('history-note'),
  prev: $('history-prev'),
  next: $('history-next'),
  pageLabel: $('history-page'),
  onOpen: (doc) => void openPrediction(doc),
  onError: (error) => {
    if (!error) return showKeyError(null);
    if (error instanceof ApiError && error.status === 401) showKeyError(error.message);
  },
});

keyInput.value = storedKey();
keyInput.addEventListener('change', () => {
  storeKey(currentKey());
  banner.hidden = true;
  const problem = keyProblem(currentKey());
  showKeyError(problem ?? null);
  void history.setKey(problem ? '' : currentKey());
});
$('key-show').addEventListener('click', (event) => {
  const hidden = keyInput.type === 'password';
  keyInput.type = hidden ? 'text' : 'password';
  event.currentTarget.textContent = hidden ? 'Hide' : 'Show';
});
$('key-forget').addEventListener('click', () => {
  keyInput.value = '';
  storeKey('');
  showKeyError(null);
  void history.setKey('');
  // What the key showed goes with it: the result is not followed on, nor left on screen.
  result.stop();
  $('result-card').hidden = true;
});

// ---- the result ----------------------------------------------------------------------------

const result = resultView({
  card: $('result-card'),
  status: $('result-status'),
  message: $('result-message'),
  bar: $('progress-bar'),
  barText: $('progress-text'),
  error: $('result-error'),
  caption: $('result-caption'),
  images: $('result-images'),
  idLine: $('result-id'),
});

const TERMINAL = new Set(['executed', 'failed']);

function follow(record) {
  return result.follow(currentKey(), record, {
    onChange: (next) => {
      if (TERMINAL.has(next.status)) void history.refresh();
    },
  });
}

async function openPrediction(doc) {
  // Listed items leave out isScanables and error: read the whole record.
  try {
    const record = await getPrediction(currentKey(), doc.id);
    void follow(record);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) showKeyError(error.message);
    else history.notice(`Could not open that prediction: ${error.message}`);
  }
}

// ---- the form ------------------------------------------------------------------------------

const currentSchema = () => schemas[workflowSelect.value];
const current = () => {
  const schema = currentSchema();
  const { body, unreadable } = schema ? readBody(form, workflowSelect.value, schema) : { body: {}, unreadable: [] };
  return { workflow: workflowSelect.value, schema, body, unreadable };
};

const preview = livePreview({
  box: $('preview'),
  image: $('preview-image'),
  note: $('preview-note'),
  cost: $('cost-value'),
  fields,
  current,
  visibleErrors: () => (submitted ? new Set([...fields.querySelectorAll('[data-wf]')].map((input) => input.name)) : touched),
});

function showWorkflow(name, carried) {
  const schema = schemas[name];
  if (!schema) return;
  renderFields($('fields'), $('more-fields'), schema, carried);
  shownWorkflow = name;
  $('workflow-help').textContent = workflowNote(name);
  touched = new Set();
  submitted = false;
  clearErrors(form, banner);
  preview.now();
}

fields.addEventListener('input', (event) => {
  if (event.target.name) touched.add(event.target.name);
  // A refusal of the last Create (no credits, say) is about what was sent, not what is being typed.
  banner.hidden = true;
  preview.schedule();
});
fields.addEventListener('change', (event) => {
  if (event.target.name) touched.add(event.target.name);
  preview.schedule();
});
let shownWorkflow;
workflowSelect.addEventListener('change', () => {
  // A QR art prompt describes a code's picture, an outpainting one the border of a photo (and
  // none means "caption it"): values cross only between QR workflows.
  const sameFamily = (shownWorkflow === 'outpainting') === (workflowSelect.value === 'outpainting');
  const carried = sameFamily ? fieldValues(form) : {};
  remember('qr-art.workflow', workflowSelect.value);
  showWorkflow(workflowSelect.value, carried);
});

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const schema = currentSchema();
  if (!schema) return;
  clearErrors(form, banner);
  showKeyError(null);
  submitted = true;
  const key = currentKey();
  if (!key || keyProblem(key)) {
    showKeyError(keyProblem(key) ?? 'Enter your API key first (see "Where do I get a key?").');
    keyInput.focus();
    return;
  }
  const { body, unreadable } = readBody(form, workflowSelect.value, schema);
  if (unreadable.length) {
    for (const name of unreadable) showFieldError(form, name, 'Enter a number.');
    form.querySelector('[aria-invalid="true"]')?.focus();
    return;
  }
  // A create that got no answer may have been made: trying the same body again sends the same
  // Idempotency-Key, and the service answers with that prediction instead of charging again.
  const sent = JSON.stringify(body);
  if (!pendingCreate || pendingCreate.body !== sent || pendingCreate.key !== key) pendingCreate = { key, body: sent, idempotencyKey: newIdempotencyKey() };
  createButton.disabled = true;
  createButton.textContent = 'Creating…';
  try {
    const record = await createPrediction(key, body, pendingCreate.idempotencyKey);
    pendingCreate = null;
    void history.refresh();
    void follow(record);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      showKeyError(error.message);
      keyInput.focus();
    } else if (error instanceof ApiError) {
      showApiError(form, banner, error);
      const first = form.querySelector('[aria-invalid="true"]');
      if (first) first.focus();
      else banner.scrollIntoView({ block: 'center' });
    } else {
      banner.textContent = `Could not reach the service: ${error.message}`;
      banner.hidden = false;
    }
  } finally {
    createButton.disabled = false;
    createButton.textContent = 'Create';
  }
});

// ---- start ---------------------------------------------------------------------------------

async function start() {
  try {
    schemas = workflowSchemas(await openApi());
  } catch (error) {
    $('fields-loading').textContent = `Could not load the form from /openapi.json: ${error.message}`;
    return;
  }
  for (const name of Object.keys(schemas)) {
    const option = document.createElement('option');
    option.value = name;
    const short = workflowNote(name).split(':')[0] || name;
    option.textContent = `${short} — ${name}`;
    workflowSelect.append(option);
  }
  const remembered = recall('qr-art.workflow');
  workflowSelect.value = schemas[remembered] ? remembered : schemas[DEFAULT_WORKFLOW] ? DEFAULT_WORKFLOW : Object.keys(schemas)[0];
  showWorkflow(workflowSelect.value, {});
  document.body.dataset.ready = 'true';
  const problem = keyProblem(currentKey());
  if (problem) showKeyError(problem);
  await history.setKey(problem ? '' : currentKey());
}

void start();
