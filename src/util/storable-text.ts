/**
 * Text PostgreSQL can hold: its text and jsonb types refuse U+0000, and jsonb an unpaired UTF-16
 * surrogate (JSON.stringify writes it as a lone \ud8xx escape).
 */

const LONE_SURROGATE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';

/** U+0000 or an unpaired UTF-16 surrogate. */
export const UNSTORABLE_TEXT = new RegExp(`\\u0000|${LONE_SURROGATE}`);

/** The text with U+0000 left out and each unpaired surrogate replaced by U+FFFD, as a decoder would. */
export function storableText(text: string): string {
  return text.replace(/\u0000/g, '').replace(new RegExp(LONE_SURROGATE, 'g'), '\ufffd');
}
