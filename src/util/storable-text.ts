/**
 * Text PostgreSQL can hold: its text and jsonb types refuse U+0000, and jsonb an unpaired UTF-16
 * surrogate (JSON.stringify writes it as a lone \ud8xx escape).
 */

/** U+0000 or an unpaired UTF-16 surrogate. */
export const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The text with U+0000 left out and each unpaired surrogate replaced by U+FFFD, as a decoder would. */
export function storableText(text: string): string {
  return text.replace(/\u0000/g, '').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}
