/**
 * A JSON body's text. JSON is UTF-8 (RFC 8259; a `charset` parameter has no effect), so bytes
 * that are not UTF-8 are refused: decoded leniently, a Latin-1 "café" became "caf\uFFFD" and a
 * paid code carried the wrong text. A leading byte-order mark is dropped, as JSON parsers drop it.
 */
import { ApiError } from './errors.ts';

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

export function jsonBodyText(raw: Uint8Array): string {
  try {
    return STRICT_UTF8.decode(raw);
  } catch {
    const message = 'the body is not valid UTF-8: JSON is sent as UTF-8, whatever its charset parameter says';
    throw new ApiError(400, 'invalid_json', message, [{ field: '', rule: 'utf8', message }]);
  }
}
