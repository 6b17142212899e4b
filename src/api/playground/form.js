// The create form, built from /openapi.json's per-workflow request schemas
// (components.schemas.Create_*): one input per field, named as the API names it, so that an
// error's details[].field finds its input.

/** Plain words for the fields; the API name is shown next to each. */
const LABELS = {
  prompt: 'Describe the picture',
  qrText: 'Describe the picture',
  qrContent: 'What the code opens',
  qrImage: 'Link to your black-and-white QR code image',
  image: 'Link to your picture',
  negativePrompt: 'Things to avoid',
  seed: 'Seed (same seed, same picture)',
  steps: 'Steps',
  qrSteps: 'Steps',
  qrStrength: 'Code strength',
  cfg: 'Follow the prompt (cfg)',
  model: 'Model',
  batchSize: 'Number of images',
  enhance: 'Enhance',
  aspectRatio: 'Shape',
  resolution: 'Size',
  qrCodePartern: 'Pattern',
  qrRatio: 'Code size (share of the short side)',
  qrX: 'Code position from the left (px)',
  qrY: 'Code position from the top (px)',
  preset: 'Style preset',
  qrRepair: 'If it might not scan',
  webhook: 'Webhook URL (for programs)',
  image_width: 'Resize your picture to width (px)',
  image_height: 'Resize your picture to height (px)',
  padding_left: 'Add on the left (px)',
  padding_right: 'Add on the right (px)',
  padding_top: 'Add on top (px)',
  padding_bottom: 'Add at the bottom (px)',
  type: 'Quality',
};

const PLACEHOLDERS = {
  prompt: 'a cosy café with warm lights, watercolor',
  qrText: 'a cosy café with warm lights, watercolor',
  qrContent: 'https://your-menu.example.com',
  qrImage: 'https://example.com/my-qr-code.png',
  image: 'https://example.com/my-picture.jpg',
  webhook: 'https://example.com/hooks/qr-art',
};

/** Fields drawn in the "Layout" group: where and how the code sits in the picture. */
export const LAYOUT_FIELDS = ['aspectRatio', 'resolution', 'qrCodePartern', 'qrRatio', 'qrX', 'qrY'];
const LONG_TEXT = ['prompt', 'qrText', 'negativePrompt'];

/** One line per workflow, for people who have not read the docs. */
const WORKFLOW_NOTES = {
  generate_qr_art: 'v1: art around a QR code image you already have.',
  'generate_qr_art_v1.1': 'v1.1: art around a QR code image you already have.',
  generate_qr_art_v2: 'v2: art around a QR code image you already have.',
  generate_qr_art_v3a: 'v3a: art around a QR code image you already have.',
  generate_qr_art_v3b: 'v3b: art around a QR code image you already have.',
  generate_qr_art_v4: 'v4: we draw the code from your link, square picture.',
  generate_qr_art_v4s: 'v4s: like v4, cheaper, with steps.',
  generate_qr_art_v4real: 'v4real: like v4s, photographic model.',
  generate_qr_art_v4niji: 'v4niji: like v4s, anime model.',
  generate_qr_art_v4dream: 'v4dream: like v4s, dreamy model.',
  generate_qr_art_v5: 'v5: choose the shape, size, pattern and position of the code. The best start.',
  generate_qr_art_v5s: 'v5s: like v5, faster and cheaper (few steps).',
  outpainting: 'Outpainting: extend a picture of yours beyond its borders.',
};

/** { workflowName: schema } from the OpenAPI document, in the document's order. */
export function workflowSchemas(openapi) {
  const schemas = openapi?.components?.schemas ?? {};
  const byName = {};
  for (const [component, schema] of Object.entries(schemas)) {
    const name = component.startsWith('Create_') ? schema?.properties?.workflow?.const : undefined;
    if (typeof name === 'string') byName[name] = schema;
  }
  return byName;
}

export const workflowNote = (name) => WORKFLOW_NOTES[name] ?? '';

/** The rule of a property, with anyOf (qrSteps: integer or digit string) reduced to its non-string branch. */
function ruleOf(property) {
  if (Array.isArray(property.anyOf)) {
    const branch = property.anyOf.find((b) => b.type === 'integer' || b.type === 'number') ?? property.anyOf[0];
    return { ...branch, ...property, anyOf: undefined, type: branch.type };
  }
  return property;
}

const el = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  node.append(...children);
  return node;
};

function control(name, rule, required, value) {
  const id = `field-${name}`;
  if (Array.isArray(rule.enum)) {
    const select = el('select', { id, name });
    const hasDefault = rule.default !== undefined;
    if (!hasDefault) select.append(el('option', { value: '' }, required ? 'choose…' : 'none'));
    for (const option of rule.enum) {
      select.append(el('option', { value: option }, hasDefault && option === rule.default ? `${option} (default)` : option));
    }
    select.value = value ?? (hasDefault ? String(rule.default) : '');
    return select;
  }
  if (rule.type === 'integer' || rule.type === 'number') {
    const placeholder = rule.default !== undefined ? `${rule.default} (default)` : name === 'qrX' || name === 'qrY' ? 'centred' : name === 'seed' ? 'random' : undefined;
    const input = el('input', {
      id,
      name,
      type: 'number',
      inputmode: rule.type === 'integer' ? 'numeric' : 'decimal',
      min: rule.minimum,
      max: rule.maximum,
      step: rule.type === 'integer' ? 1 : 'any',
      placeholder,
    });
    if (value !== undefined) input.value = value;
    return input;
  }
  const attributes = { id, name, placeholder: PLACEHOLDERS[name], maxlength: rule.maxLength, spellcheck: LONG_TEXT.includes(name) ? 'true' : 'false' };
  const input = LONG_TEXT.includes(name) ? el('textarea', { ...attributes, rows: name === 'negativePrompt' ? 2 : 3 }) : el('input', { ...attributes, type: rule.format === 'uri' ? 'url' : 'text', autocomplete: 'off' });
  if (value !== undefined) input.value = value;
  return input;
}

function fieldBlock(name, property, required, value) {
  const rule = ruleOf(property);
  const input = control(name, rule, required, value);
  input.dataset.wf = '';
  const help = [];
  if (property.description) help.push(property.description);
  if ((rule.type === 'integer' || rule.type === 'number') && rule.minimum !== undefined && rule.maximum !== undefined && name !== 'seed') {
    help.push(`${rule.minimum} to ${rule.maximum}.`);
  }
  const helpId = `help-${name}`;
  const errorId = `error-${name}`;
  input.setAttribute('aria-describedby', `${helpId} ${errorId}`);
  if (required) input.setAttribute('aria-required', 'true');
  return el(
    'div',
    { class: 'field', 'data-field': name },
    el('label', { for: input.id }, LABELS[name] ?? name, required ? el('span', { class: 'req', title: 'required' }, ' *') : '', ' ', el('code', { class: 'api-name' }, name)),
    input,
    el('p', { class: 'field-error', id: errorId, role: 'alert', hidden: true }),
    el('p', { class: 'help', id: helpId }, help.join(' ')),
  );
}

/**
 * Draws the fields of one workflow: what is required first and the layout group (v5) into
 * `container`, the rest under "More options" into `moreContainer`. `values` (name → text)
 * refills fields that the previous workflow shared (the prompt survives a change of version).
 */
export function renderFields(container, moreContainer, schema, values = {}) {
  container.replaceChildren();
  moreContainer.replaceChildren();
  const properties = Object.entries(schema.properties ?? {}).filter(([name]) => name !== 'workflow');
  const required = new Set(schema.required ?? []);
  const carried = { ...values };
  // The prompt has two names across versions.
  if (carried.prompt === undefined && carried.qrText !== undefined) carried.prompt = carried.qrText;
  if (carried.qrText === undefined && carried.prompt !== undefined) carried.qrText = carried.prompt;
  const block = ([name, property]) => fieldBlock(name, property, required.has(name), carried[name]);

  const basics = properties.filter(([name]) => required.has(name) && !LAYOUT_FIELDS.includes(name));
  const layout = properties.filter(([name]) => LAYOUT_FIELDS.includes(name));
  const more = properties.filter(([name]) => !required.has(name) && !LAYOUT_FIELDS.includes(name));
  container.append(el('fieldset', { class: 'group' }, el('legend', {}, 'Basics'), ...basics.map(block)));
  if (layout.length) container.append(el('fieldset', { class: 'group layout' }, el('legend', {}, 'Layout of the code'), ...layout.map(block)));
  if (more.length) {
    const details = el('details', { class: 'group more' }, el('summary', {}, `More options (${more.length})`), ...more.map(block));
    // A value carried over is sent with the next create: never out of sight. One that is this
    // workflow's default (a select left as it was) changes nothing, so it opens nothing.
    details.open = more.some(([name, property]) => carried[name] !== undefined && carried[name] !== String(property.default ?? ''));
    moreContainer.append(details);
  }
}

/** name → text of every field in the form (for carrying values over to another workflow). */
export function fieldValues(form) {
  const values = {};
  for (const input of form.querySelectorAll('[data-wf]')) if (input.value !== '') values[input.name] = input.value;
  return values;
}

/**
 * The create body: every filled field with its JSON type. Numbers the browser cannot read
 * come back in `unreadable` (the body leaves them out).
 */
export function readBody(form, workflow, schema) {
  const body = { workflow };
  const unreadable = [];
  for (const input of form.querySelectorAll('[data-wf]')) {
    const rule = ruleOf(schema.properties?.[input.name] ?? {});
    if (input.type === 'number') {
      if (input.validity.badInput) unreadable.push(input.name);
      else if (input.value !== '') body[input.name] = Number(input.value);
    } else if (input.value !== '') {
      body[input.name] = rule.type === 'integer' || rule.type === 'number' ? Number(input.value) : input.value;
    }
  }
  return { body, unreadable };
}

/** Clears every field error (and the banner). */
export function clearErrors(root, banner) {
  for (const node of root.querySelectorAll('.field-error')) {
    node.hidden = true;
    node.textContent = '';
  }
  for (const node of root.querySelectorAll('[aria-invalid]')) node.removeAttribute('aria-invalid');
  if (banner) {
    banner.hidden = true;
    banner.textContent = '';
  }
}

/**
 * Makes the field errors under `root` say `messages` (field name → text) and nothing else,
 * leaving the fields in `keep` as they are. A slot whose words stay the same is not touched:
 * live checks run at every pause in typing, and a slot rewritten with the same words would be
 * announced again (role=alert) while the user types elsewhere.
 */
export function syncFieldErrors(root, messages, keep = new Set()) {
  for (const slot of root.querySelectorAll('.field-error')) {
    const field = slot.id.slice('error-'.length);
    if (keep.has(field)) continue;
    const message = messages.get(field) ?? '';
    if (slot.textContent === message) continue;
    const input = root.querySelector(`[name="${CSS.escape(field)}"]`);
    slot.textContent = message;
    slot.hidden = !message;
    if (message) {
      input?.setAttribute('aria-invalid', 'true');
      const details = input?.closest('details');
      if (details) details.open = true;
    } else input?.removeAttribute('aria-invalid');
  }
}

/** Shows one message beside the input named `field`; false when the page has no such input. */
export function showFieldError(root, field, message) {
  const input = field ? root.querySelector(`[name="${CSS.escape(field)}"]`) : null;
  const slot = field ? root.querySelector(`#error-${CSS.escape(field)}`) : null;
  if (!input || !slot) return false;
  slot.textContent = slot.textContent ? `${slot.textContent} ${message}` : message;
  slot.hidden = false;
  input.setAttribute('aria-invalid', 'true');
  // A field inside the closed "More options" group must be seen.
  const details = input.closest('details');
  if (details) details.open = true;
  return true;
}

/**
 * Puts an API error where it belongs: each details[] entry beside its field, the rest (and an
 * error with no details) in the banner. `only` (a Set) limits which fields may show theirs,
 * for live checks while the user has touched only some fields. Returns how many went beside a field.
 */
export function showApiError(root, banner, error, only) {
  const leftover = [];
  let placed = 0;
  const details = error.details?.length ? error.details : [];
  for (const detail of details) {
    if (only && !only.has(detail.field)) continue;
    if (showFieldError(root, detail.field, detail.message ?? error.message)) placed += 1;
    else leftover.push(detail.message ?? error.message);
  }
  if (!only && (details.length === 0 || leftover.length)) {
    banner.textContent = leftover.length ? leftover.join(' ') : error.message;
    banner.hidden = false;
  }
  return placed;
}
